import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { baseUrl, newTenant } from "../support/api.js";

// The SDK as an app team gets it: `npm pack` of @feeds/contract, @feeds/client and @feeds/node,
// the tarballs installed into an empty project (their dependencies from the registry), a small
// TypeScript script type-checked against the installed types and run against the test system.

const root = fileURLToPath(new URL("../..", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "feeds-consumer-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const packages = ["contract", "client", "node"] as const;
interface Packed {
  filename: string;
  files: { path: string }[];
}

function pack(dir: string): Packed {
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", work], { cwd: join(root, "sdk", dir), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  // Lifecycle scripts may print before the JSON.
  const [packed] = JSON.parse(out.slice(out.indexOf("[\n"))) as Packed[];
  if (!packed) throw new Error(`npm pack printed no result for sdk/${dir}`);
  return packed;
}

const consumer = `
import { ServerClient, UserClient, FeedsApiError, verifyWebhook, type Activity, type ErrorCode } from "@feeds/node";
import { UserClient as BrowserUserClient } from "@feeds/client";
import { routeTable } from "@feeds/contract/routes";

const [baseUrl, apiKey, apiSecret] = process.argv.slice(2) as [string, string, string];
const server = new ServerClient({ baseUrl, apiKey, apiSecret });
const alice = await server.upsertUser("alice", { name: "Alice" });
const added = await server.addActivity("user:alice", { actor: "alice", verb: "post", object: "note:1", foreign_id: "note-1", time: new Date().toISOString() });
const user = new UserClient({ baseUrl, apiKey, apiSecret, userId: "alice" });
const read: Activity[] = [];
for await (const a of user.feed("user:alice").all({ limit: 10 })) read.push(a);
let code: ErrorCode | undefined;
try {
  await user.getActivity("no-such-activity");
} catch (e) {
  if (e instanceof FeedsApiError) code = e.code;
}
const browser = new BrowserUserClient({ baseUrl, tokenProvider: async () => (await user.getToken()) ?? "" });
const me = await browser.me();
console.log(JSON.stringify({ user: alice.id, me: me.id, added: added.id, read: read.map((a) => a.id), code, route: routeTable.feedApi.readFeed.path, verify: typeof verifyWebhook }));
`;

describe("the SDK packages, packed and installed as an app would", () => {
  const packed = new Map<string, Packed>();

  it("npm pack ships the built package only: dist, types, README, CHANGELOG, LICENSE", () => {
    for (const dir of packages) {
      const p = pack(dir);
      packed.set(dir, p);
      const files = p.files.map((f) => f.path).sort();
      console.log(`@feeds/${dir}: ${files.length} files in ${p.filename}\n  ${files.join("\n  ")}`);
      expect(files).toEqual(expect.arrayContaining(["package.json", "README.md", "CHANGELOG.md", "LICENSE", "dist/index.js", "dist/index.d.ts"]));
      const stray = files.filter((f) => !/^(package\.json|README\.md|CHANGELOG\.md|LICENSE|dist\/.+\.(js|d\.ts))$/.test(f));
      expect(stray, `@feeds/${dir} ships more than its build`).toEqual([]);
    }
    expect(packed.get("client")?.files.map((f) => f.path)).toContain("dist/bundle/feeds-client.min.js");
  });

  it("installs into an empty project, type-checks a script against the installed types and runs it against the system", async () => {
    const tarballs = packages.map((dir) => join(work, packed.get(dir)?.filename ?? pack(dir).filename));
    const app = join(work, "app");
    execFileSync("mkdir", ["-p", app]);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--no-package-lock", ...tarballs], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    writeFileSync(join(app, "consumer.ts"), consumer);
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, outDir: "out", skipLibCheck: false,
          lib: ["ES2023"], types: ["node"], typeRoots: [join(root, "node_modules", "@types")],
        },
        files: ["consumer.ts"],
      }),
    );
    execFileSync(join(root, "node_modules", ".bin", "tsc"), ["-p", app], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });

    const t = await newTenant();
    const out = execFileSync(process.execPath, [join(app, "out", "consumer.js"), baseUrl(), t.apiKey, t.apiSecret], { cwd: app, encoding: "utf8" });
    const result = JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
    expect(result).toMatchObject({ user: "alice", me: "alice", code: "NOT_FOUND", route: "/v1/feeds/{group}/{id}", verify: "function" });
    expect(result["read"]).toEqual([result["added"]]);
  }, 240_000);
});
