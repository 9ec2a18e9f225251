import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";

// .github/workflows/ci.yml: what GitHub Actions runs on every push and pull request, read as
// GitHub reads it (YAML) since no runner is at hand here. It must run `npm test` on MongoDB, NATS
// and Redis in containers, on every Node the project supports (20, 22 and 24: package.json's
// engines and the Dockerfile's image), with the history buf breaking compares against.

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, unknown>;
}
interface Job {
  "runs-on"?: unknown;
  env?: Record<string, unknown>;
  strategy?: { "fail-fast"?: unknown; matrix?: Record<string, unknown> };
  steps?: Step[];
}
interface Workflow {
  on?: unknown;
  jobs?: Record<string, Job>;
}

const root = join(import.meta.dirname, "..", "..");
const workflow = parse(readFileSync(join(root, ".github", "workflows", "ci.yml"), "utf8")) as Workflow;
const jobs = Object.entries(workflow.jobs ?? {});
/** The jobs with a step that runs `npm test`. */
const testing = jobs.filter(([, job]) => (job.steps ?? []).some((s) => s.run?.trim() === "npm test"));

describe(".github/workflows/ci.yml", () => {
  it("runs on every push and pull request", () => {
    const on = workflow.on;
    const events = typeof on === "string" ? [on] : Array.isArray(on) ? on : Object.keys(on ?? {});
    expect(events).toEqual(expect.arrayContaining(["push", "pull_request"]));
    // No branch filter: a fork's branches get the check too.
    if (on && typeof on === "object" && !Array.isArray(on)) {
      for (const event of ["push", "pull_request"]) expect((on as Record<string, unknown>)[event] ?? null).toBeNull();
    }
  });

  it("has a job that runs npm test, on ubuntu-latest", () => {
    expect(testing.map(([name]) => name)).toHaveLength(1);
    expect(testing[0]?.[1]["runs-on"]).toBe("ubuntu-latest");
  });

  it("runs npm test with TEST_INFRA=containers (MongoDB 7 as a replica set, NATS, Redis)", () => {
    const [, job] = testing[0] ?? ["", {}];
    const step = (job.steps ?? []).find((s) => s.run?.trim() === "npm test");
    expect({ ...job.env, ...step?.env }.TEST_INFRA).toBe("containers");
  });

  it("runs on Node 20, 22 and 24, each line reporting whatever another does", () => {
    const strategy = testing[0]?.[1].strategy;
    expect(strategy?.matrix?.node).toEqual([20, 22, 24]);
    expect(strategy?.["fail-fast"]).toBe(false);
    // The lines the matrix runs are the ones the project says it supports.
    const engines = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;
    expect(engines).toBe(">=20");
    expect(readFileSync(join(root, "Dockerfile"), "utf8")).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
  });

  it("sets up the matrix's Node with the npm cache before npm test, after a checkout with the previous commit", () => {
    const steps = testing[0]?.[1].steps ?? [];
    const at = (pred: (s: Step) => boolean) => steps.findIndex(pred);
    const checkout = at((s) => s.uses?.startsWith("actions/checkout@") === true);
    const node = at((s) => s.uses?.startsWith("actions/setup-node@") === true);
    const test = at((s) => s.run?.trim() === "npm test");
    expect(checkout).toBeGreaterThanOrEqual(0);
    expect(node).toBeGreaterThan(checkout);
    expect(test).toBeGreaterThan(node);
    expect(steps[node]?.with?.["node-version"]).toBe("${{ matrix.node }}");
    expect(steps[node]?.with?.cache).toBe("npm");
    // scripts/check-proto.mjs runs buf breaking against HEAD~1: a depth-1 clone has none.
    const depth = steps[checkout]?.with?.["fetch-depth"];
    expect(depth === 0 || (typeof depth === "number" && depth >= 2)).toBe(true);
  });

  it("installs the npm the project uses, whose allowScripts decides which install scripts run", () => {
    const steps = testing[0]?.[1].steps ?? [];
    const npm = steps.find((s) => /npm install (--global|-g) npm@11(\.|\s|$)/.test(s.run ?? ""));
    const test = steps.findIndex((s) => s.run?.trim() === "npm test");
    expect(npm).toBeDefined();
    expect(steps.indexOf(npm as Step)).toBeLessThan(test);
  });
});
