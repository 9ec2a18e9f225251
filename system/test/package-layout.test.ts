import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

// The package layout rule: the one-process composition (system/) is the only workspace that names
// a service or the gateway. The gateway reaches services only as clients it is handed, no service
// names another, and the shared pieces (kit, the SDK's packages, proto) name none of them: a part
// that needs something of another part's finds it in kit. The server shares only the schemas of the
// public API with the client packages: it names @feeds/contract, never @feeds/node or @feeds/client.

const root = join(import.meta.dirname, "..", "..");
const readJson = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;

/** Every workspace folder of the root manifest, `services/*` expanded. */
function workspaces(): string[] {
  const patterns = readJson(join(root, "package.json")).workspaces as string[];
  return patterns.flatMap((p) =>
    p.endsWith("/*")
      ? readdirSync(join(root, p.slice(0, -2)))
          .map((d) => `${p.slice(0, -2)}/${d}`)
          .filter((d) => existsSync(join(root, d, "package.json")))
      : [p],
  );
}

const nameOf = (dir: string) => readJson(join(root, dir, "package.json")).name as string;
const services = workspaces().filter((d) => d.startsWith("services/"));
/** Packages only the composition may name: the services and the gateway. */
const composed = new Set([...services.map(nameOf), nameOf("gateway")]);

function dependenciesOf(dir: string): string[] {
  const pkg = readJson(join(root, dir, "package.json"));
  const fields = ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"];
  return fields.flatMap((f) => Object.keys((pkg[f] as Record<string, string> | undefined) ?? {}));
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (entry === "node_modules" || entry === "dist" || entry === "gen") return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(entry) ? [path] : [];
  });
}

/** Every `@feeds/<package>` a workspace's sources name (imports, dynamic imports, mocks), with where. */
function namedPackages(dir: string): { pkg: string; at: string }[] {
  const out: { pkg: string; at: string }[] = [];
  for (const file of sourceFiles(join(root, dir))) {
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        for (const m of line.matchAll(/["'`](@feeds\/[a-z0-9-]+)(?:\/[^"'`]*)?["'`]/g)) {
          out.push({ pkg: m[1] as string, at: `${relative(root, file)}:${i + 1}` });
        }
      });
  }
  return out;
}

/** The published client packages and the contract they share with the server. */
const sdkPackages = new Set(["@feeds/contract", "@feeds/node", "@feeds/client"]);

// Every workspace but the composition itself.
const checked = workspaces().filter((d) => d !== "system");

describe("package layout", () => {
  it("reads the gateway, the seven services and the shared workspaces", () => {
    expect(services).toHaveLength(7);
    expect(checked).toEqual(expect.arrayContaining(["gateway", "kit", "sdk/contract", "sdk/node", "proto", "cli", ...services]));
  });

  it("the CLI speaks only the public API: its manifest and sources name no workspace but the SDK's packages", () => {
    const named = [...dependenciesOf("cli"), ...namedPackages("cli").map(({ pkg, at }) => `${pkg} at ${at}`)];
    expect(named.filter((n) => n.startsWith("@feeds/") && !sdkPackages.has(n.split(" ")[0] as string))).toEqual([]);
    expect(dependenciesOf("cli")).toContain("@feeds/node");
  });

  it("the SDK's packages name no workspace but each other, and the server names only @feeds/contract of them", () => {
    const sdk = checked.filter((d) => d.startsWith("sdk/"));
    // This file names them to look for them.
    const here = relative(root, import.meta.filename);
    const named = (dir: string) =>
      [...dependenciesOf(dir), ...namedPackages(dir).flatMap(({ pkg, at }) => (at.startsWith(`${here}:`) ? [] : [pkg]))].filter((n) => n.startsWith("@feeds/"));
    expect(sdk.flatMap((dir) => named(dir).filter((n) => !sdkPackages.has(n)).map((n) => `${dir} names ${n}`))).toEqual([]);
    const server = ["kit", "gateway", "system", ...services];
    expect(server.flatMap((dir) => named(dir).filter((n) => sdkPackages.has(n) && n !== "@feeds/contract").map((n) => `${dir} names ${n}`))).toEqual([]);
  });

  it("no manifest but system's names a service or the gateway (a package may name itself)", () => {
    const offenders = checked.flatMap((dir) =>
      dependenciesOf(dir)
        .filter((d) => composed.has(d) && d !== nameOf(dir))
        .map((d) => `${dir}/package.json names ${d}`),
    );
    expect(offenders).toEqual([]);
  });

  it("no source but system's imports a service or the gateway", () => {
    const offenders = checked.flatMap((dir) =>
      namedPackages(dir)
        .filter(({ pkg }) => composed.has(pkg) && pkg !== nameOf(dir))
        .map(({ pkg, at }) => `${at} imports ${pkg}`),
    );
    expect(offenders).toEqual([]);
  });

  it("system is where the one-process composition lives: it names every service and the gateway", () => {
    const deps = new Set(dependenciesOf("system"));
    expect([...composed].filter((p) => !deps.has(p))).toEqual([]);
    const imported = new Set(namedPackages("system").map((n) => n.pkg));
    expect([...composed].filter((p) => !imported.has(p))).toEqual([]);
  });

  it("no source under kit, the services, the gateway or system names the local store: they are written for MongoDB (docs/storage.md)", () => {
    const offenders = ["kit", "gateway", "system", ...services].flatMap((dir) =>
      // This file names it to look for it.
      [...sourceFiles(join(root, dir, "src")), ...sourceFiles(join(root, dir, "test"))].filter((f) => f !== import.meta.filename).flatMap((file) =>
        readFileSync(file, "utf8")
          .split("\n")
          .flatMap((line, i) => (/ferret/i.test(line) ? [`${relative(root, file)}:${i + 1}`] : [])),
      ),
    );
    expect(offenders).toEqual([]);
  });
});
