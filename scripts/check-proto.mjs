// Proto hygiene: buf lint, generated code up to date (CI fails if `buf generate` would change
// gen/), and buf breaking against the previous commit when there is one.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { log, root, run } from "./lib/setup.mjs";

const buf = join(root, "node_modules", ".bin", "buf");
const env = { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` };

log("buf lint");
run(buf, ["lint"], { env });

log("checking that generated code matches buf generate");
const out = mkdtempSync(join(tmpdir(), "feeds-gen-"));
try {
  run(buf, ["generate", "--template", JSON.stringify({
    version: "v2",
    plugins: [{ local: "protoc-gen-es", out, opt: ["target=ts", "import_extension=js"] }],
  }), "proto"], { env });
  const files = (dir) =>
    readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));
  const fresh = new Map(files(out).map((f) => [relative(out, f), readFileSync(f, "utf8")]));
  const committed = new Map(files(join(root, "proto", "gen")).map((f) => [relative(join(root, "proto", "gen"), f), readFileSync(f, "utf8")]));
  const stale = [...new Set([...fresh.keys(), ...committed.keys()])].filter((k) => fresh.get(k) !== committed.get(k));
  if (stale.length) {
    log(`generated code is stale; run \`npm run proto:generate\` and commit:\n  ${stale.join("\n  ")}`);
    process.exit(1);
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}

const prev = spawnSync("git", ["rev-parse", "--verify", "--quiet", "HEAD~1"], { cwd: root, encoding: "utf8" });
if (prev.status === 0) {
  const hasProto = spawnSync("git", ["cat-file", "-e", "HEAD~1:proto"], { cwd: root });
  if (hasProto.status === 0) {
    log("buf breaking against HEAD~1");
    run(buf, ["breaking", "proto", "--against", `${root}/.git#ref=HEAD~1,subdir=proto`], { env });
  }
} else {
  log("buf breaking: no previous commit to compare with");
}
log("proto checks passed");
