import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";

// The README's quick start, run by scripts/first-run.mjs as a newcomer would type it, against the
// system the end-to-end tests started (its URL and staff login stand for what `npm start` prints).

const root = join(import.meta.dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "feeds-first-run-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function firstRun(readme: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    FEEDS_URL: inject("baseUrl"),
    FEEDS_EMAIL: inject("staffEmail"),
    FEEDS_PASSWORD: inject("staffPassword"),
    FEEDS_CONFIG_DIR: mkdtempSync(join(work, "config-")),
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [join(root, "scripts", "first-run.mjs"), "--readme", readme], { cwd: root, env, timeout: 240_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const readme = readFileSync(join(root, "README.md"), "utf8");

describe("the README's quick start (scripts/first-run.mjs)", () => {
  it("runs as the README shows it, every step and the curl beside it", async () => {
    const r = await firstRun(join(root, "README.md"));
    expect(r.stderr, r.stdout).toBe("");
    expect(r.code).toBe(0);
    const steps = [...readme.matchAll(/^### (\d+\. .+)$/gm)].map((m) => m[1]);
    expect(steps.length).toBeGreaterThanOrEqual(9);
    for (const step of steps) {
      expect(r.stdout).toContain(`  ${step}\n`);
      expect(r.stdout).toContain(`ok curl  ${step}\n`);
    }
    expect(r.stdout).toMatch(/^quick start: \d+ steps, \d+ commands, [\d.]+ s wall/m);
    // The quick start's wall time, in the test run's output.
    console.log(r.stdout.trimEnd().split("\n").at(-1));
  }, 240_000);

  it("fails, naming the step, when a README command is changed", async () => {
    const command = "npx feeds follow timeline:bob user:alice";
    expect(readme).toContain(command);
    const broken = join(work, "README-broken.md");
    writeFileSync(broken, readme.replace(command, "npx feeds follow timeline:bob user:carol"));
    const r = await firstRun(broken);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Bob's timeline follows Alice): the output differs from the README");
    expect(r.stderr).toContain("README shows: timeline:bob follows user:alice");
    expect(r.stderr).toContain("it printed:   timeline:bob follows user:carol");
    expect(r.stdout).not.toMatch(/^quick start:/m);
  }, 240_000);
});
