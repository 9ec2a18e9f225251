// OpenAPI hygiene beside scripts/check-proto.mjs: docs/openapi.json against the one of the
// previous commit (HEAD~1, as buf breaking), or of OPENAPI_BASE (a git ref) when set. A change
// that breaks an existing operation fails unless CHANGELOG.md's Unreleased section has a line
// naming its operationId in backticks and the word BREAKING. Run after `npx tsc -b`.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { breakingChanges, notedBreaks } from "../gateway/dist/openapi/breaking.js";
import { log, root } from "./lib/setup.mjs";

const base = process.env.OPENAPI_BASE || "HEAD~1";
const file = "docs/openapi.json";
const old = spawnSync("git", ["show", `${base}:${file}`], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
if (old.status !== 0) {
  log(`openapi breaking: no ${file} at ${base} to compare with`);
  process.exit(0);
}
const changes = breakingChanges(JSON.parse(old.stdout), JSON.parse(readFileSync(join(root, file), "utf8")));
const noted = notedBreaks(readFileSync(join(root, "CHANGELOG.md"), "utf8"));
const unnoted = changes.filter((c) => !noted.has(c.operationId));
for (const c of changes) log(`${noted.has(c.operationId) ? "noted" : "BREAKING"} ${c.operationId}: ${c.change}`);
if (unnoted.length) {
  log(`${unnoted.length} breaking change(s) against ${base} without a note: add a line to CHANGELOG.md under Unreleased naming each operationId in backticks with the word BREAKING (CONTRIBUTING.md)`);
  process.exit(1);
}
log(`openapi breaking against ${base}: ${changes.length} breaking change(s), all noted`);
