import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { routesById } from "@feeds/contract";

// What an app team's tools make of the committed docs/openapi.json: `redocly lint` with its
// recommended rules, and `openapi-typescript`'s types (one `operations` entry per operationId).

const root = new URL("../..", import.meta.url).pathname;
const doc = join(root, "docs", "openapi.json");
const bin = (name: string) => join(root, "node_modules", ".bin", name);
const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", REDOCLY_TELEMETRY: "off" } });

describe("docs/openapi.json by the generators' tools", () => {
  it("passes `redocly lint` (recommended rules) with no error", () => {
    const res = run(bin("redocly"), ["lint", doc, "--format=summary"]);
    const out = `${res.stdout}\n${res.stderr}`;
    const count = (level: string) => [...out.matchAll(new RegExp(`^${level}\\s+\\S+: (\\d+)`, "gm"))].reduce((n, m) => n + Number(m[1]), 0);
    // Warnings are allowed, and printed: the placeholder server is localhost, health has no 4xx.
    console.log(`redocly lint: ${count("error")} errors, ${count("warning")} warnings`);
    expect(count("error"), out).toBe(0);
    expect(res.status, out).toBe(0);
  }, 60_000);

  it("gives openapi-typescript a typed `operations` entry for every operationId", () => {
    const dir = mkdtempSync(join(tmpdir(), "feeds-openapi-ts-"));
    try {
      const out = join(dir, "api.d.ts");
      const res = run(bin("openapi-typescript"), [doc, "-o", out]);
      expect(res.status, res.stderr).toBe(0);
      const types = readFileSync(out, "utf8");
      const block = types.slice(types.indexOf("export interface operations {"));
      const typed = [...block.matchAll(/^ {4}(\w+): \{$/gm)].map((m) => m[1]);
      console.log(`openapi-typescript: ${typed.length} operations typed`);
      expect(typed.sort()).toEqual(Object.keys(routesById).sort());
      // Typed, not `never`: the 2xx body of an operation names its component.
      expect(block).toMatch(/readFeed: \{[\s\S]*?components\["schemas"\]\["FeedPage"\]/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
