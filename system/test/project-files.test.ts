import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";

// The project is Apache-2.0, and says so wherever a tool or a person looks: LICENSE, the `license`
// of every manifest in the workspace, the chart's Artifact Hub annotation and the image's label.
// The files people look for beside it exist, and every file they name is there.

const root = join(import.meta.dirname, "..", "..");
const read = (file: string) => readFileSync(join(root, file), "utf8");
const rootManifest = JSON.parse(read("package.json")) as { license?: string; workspaces: string[] };

/** The root manifest and every workspace's, `services/*` expanded. */
const manifests = [
  "package.json",
  ...rootManifest.workspaces.flatMap((p) =>
    p.endsWith("/*")
      ? readdirSync(join(root, p.slice(0, -2)))
          .map((d) => `${p.slice(0, -2)}/${d}/package.json`)
          .filter((f) => existsSync(join(root, f)))
      : [`${p}/package.json`],
  ),
];

describe("license", () => {
  it("LICENSE is the Apache License, Version 2.0", () => {
    const text = read("LICENSE");
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004\s+http:\/\/www\.apache\.org\/licenses\//);
    expect(text).toContain("END OF TERMS AND CONDITIONS");
  });

  it("every manifest in the workspace says Apache-2.0", () => {
    expect(manifests.length).toBeGreaterThanOrEqual(14);
    const wrong = manifests.filter((f) => (JSON.parse(read(f)) as { license?: string }).license !== "Apache-2.0");
    expect(wrong).toEqual([]);
  });

  it("the chart's Artifact Hub annotation and the image's OCI label say Apache-2.0, and the image holds LICENSE", () => {
    const chart = parse(read("deploy/helm/feeds/Chart.yaml")) as { annotations?: Record<string, string> };
    expect(chart.annotations?.["artifacthub.io/license"]).toBe("Apache-2.0");
    expect(read("Dockerfile")).toMatch(/^LABEL org\.opencontainers\.image\.licenses="Apache-2\.0"$/m);
    expect(read("Dockerfile")).toMatch(/^COPY --from=build \/app\/LICENSE LICENSE$/m);
  });
});

describe("the files people look for", () => {
  const files = ["CHANGELOG.md", "CONTRIBUTING.md", "SECURITY.md"];

  it("exist, and every repository path they name in backticks exists", () => {
    const missing = files.flatMap((f) =>
      [...read(f).matchAll(/`([^`\s<>{}*:]+)`/g)]
        .map((m) => m[1] as string)
        // Paths from the root: a top-level folder of the tree, then more (not a route, an RPC or
        // an annotation key), or a top-level Markdown file.
        .filter((p) => (/^[\w.-]+\/[\w./-]*\w$/.test(p) && existsSync(join(root, p.split("/")[0] as string))) || /^[A-Z]+\.md$/.test(p))
        .filter((p) => !existsSync(join(root, p)))
        .map((p) => `${f}: ${p}`),
    );
    expect(missing).toEqual([]);
  });
});
