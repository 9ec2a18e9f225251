// `npm test`: the same set-up as `npm start`, then every check and every test. What the tests need
// comes first (dependencies, build and servers, side by side; the alert rules); the checks no test
// needs (proto, the tests' types, ESLint) and the tools only the chart test needs (helm) run beside
// the tests at low priority, and their verdicts come at the end. Each step says what it cost, and
// the first test how long after the start it began.
// TEST_INFRA=containers: the tests run on MongoDB, NATS and Redis in containers (lib/containers.mjs).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import { prepareContainers, testInfraMode } from "./lib/containers.mjs";
import { checkAlertRules, costs, ensureInstalled, log, root, setup, timed } from "./lib/setup.mjs";
import { ensureChromium } from "./lib/chromium.mjs";

const t0 = Date.now();
const rel = (p) => p.replace(`${root}/`, "");
let mode;
try {
  mode = testInfraMode();
} catch (e) {
  log(e.message);
  process.exit(2);
}
// Before anything else: is there a container engine? Without one the checks below still run and
// no test does (every test file talks to the servers), and the reason is printed.
let containers = null;
if (mode === "containers") {
  ensureInstalled(); // testcontainers comes from node_modules
  containers = await timed("container engine", () => prepareContainers());
  log("skipped" in containers ? `${containers.skipped}: the checks run, no test does` : `container engine: ${containers.engine}`);
}
const infra = await setup({ servers: mode === "local" });
const testsRun = !(containers && "skipped" in containers);

/** Processes started here that run beside the tests, each in a process group of its own. */
const beside = new Set();
/** Runs a command beside the tests at low priority, its output in .cache/checks/<name>.log. */
function besideTests(name, cmd, args) {
  const logFile = join(root, ".cache", "checks", `${name}.log`);
  mkdirSync(join(root, ".cache", "checks"), { recursive: true });
  const out = openSync(logFile, "w");
  const started = Date.now();
  const child = spawn(cmd, args, { cwd: root, detached: true, stdio: ["ignore", out, out] });
  try {
    setPriority(child.pid, 10);
  } catch {
    /* it runs at normal priority */
  }
  beside.add(child);
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      beside.delete(child);
      resolve({ name, ok: code === 0, code: code ?? signal, seconds: (Date.now() - started) / 1000, logFile });
    });
  });
}
/** Stops what still runs beside the tests (the node script and its go build or tsc alike). */
function stopBeside() {
  for (const child of beside) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      /* it ended meanwhile */
    }
  }
}
process.once("SIGINT", () => {
  stopBeside();
  process.exit(130);
});

// The checks, one after the other (one core at most); under TEST_INFRA=containers without an
// engine there are no tests to run beside, and they run in the foreground.
const tsc = join(root, "node_modules", ".bin", "tsc");
// console: the operator console's sources (Vite builds them without a type check).
const testProjects = ["test", "console", "sdk/contract/test", "sdk/client/test", "sdk/node/test", "kit/test", "gateway/test", "system/test", ...readdirSync(join(root, "services")).map((s) => `services/${s}/test`)].filter(
  (dir) => existsSync(join(root, dir, "tsconfig.json")),
);
const checks = [
  { name: "proto", what: "proto checks (buf lint, generated code, buf breaking)", cmd: process.execPath, args: [join(root, "scripts", "check-proto.mjs")] },
  { name: "openapi", what: "OpenAPI breaking changes against the previous commit", cmd: process.execPath, args: [join(root, "scripts", "check-openapi.mjs")] },
  ...testProjects.map((dir) => ({ name: `types-${dir.replaceAll("/", "-")}`, what: `types of ${dir}`, cmd: tsc, args: ["-p", dir, "--noEmit"] })),
  { name: "eslint", what: "eslint", cmd: join(root, "node_modules", ".bin", "eslint"), args: ["--max-warnings", "0", "."] },
];
const checksDone = (async () => {
  const results = [];
  for (const c of checks) {
    if (testsRun) results.push({ ...(await besideTests(c.name, c.cmd, c.args)), what: c.what });
    else {
      const started = Date.now();
      const r = await new Promise((resolve) => spawn(c.cmd, c.args, { cwd: root, stdio: "inherit" }).once("exit", (code) => resolve(code)));
      results.push({ name: c.name, what: c.what, ok: r === 0, code: r, seconds: (Date.now() - started) / 1000, logFile: null });
    }
  }
  return results;
})();
if (testsRun) log(`beside the tests, at low priority: ${checks.map((c) => c.what).join(", ")} (logs in .cache/checks/)`);

// helm and the manifest checker (scripts/k8s-check) serve the chart test alone, which runs last
// (vitest project `deploy`): they build meanwhile, cached under .cache/k8s-check/ (a cold build
// takes minutes). The chart test waits for this build or, should it fail, builds them itself.
const k8sBuild = testsRun ? besideTests("k8s-tools", process.execPath, [join(root, "scripts", "k8s-check", "tools.mjs")]) : null;
if (k8sBuild) log("building helm and the manifest checker beside the tests (log .cache/checks/k8s-tools.log)");
void k8sBuild?.then((r) => log(r.ok ? `helm and the manifest checker ready (${r.seconds.toFixed(1)} s)` : `helm and the manifest checker: build failed (${r.code}; ${rel(r.logFile)}); the chart test builds them itself`));

await timed("alert rules (promtool)", () => checkAlertRules());
if (testsRun) await timed("chromium (the browser test's; apt when missing)", () => ensureChromium(log));
const servers = containers && testsRun ? await timed("containers", () => containers.start({ log })) : null;
if (servers) Object.assign(infra, { mongoUrl: servers.mongoUrl, natsUrl: servers.natsUrl, redisUrl: servers.redisUrl });
log(`set-up before the tests: ${costs.map((c) => `${c.step.replace(/ \(.*/, "")} ${c.seconds.toFixed(1)} s`).join(", ")}; ${((Date.now() - t0) / 1000).toFixed(1)} s since the start`);

let status = 0;
const report = join(root, ".cache", "vitest-report.json");
const firstTest = join(root, ".cache", "first-test.json");
if (testsRun) {
  log("vitest");
  rmSync(firstTest, { force: true });
  const reporters = ["--reporter=default", "--reporter=json", `--outputFile.json=${report}`, `--reporter=${join(root, "scripts", "lib", "first-test-reporter.mjs")}`];
  const vitest = spawn(join(root, "node_modules", ".bin", "vitest"), ["run", ...reporters, ...process.argv.slice(2)], {
    cwd: root,
    stdio: "inherit",
    env: {
      ...process.env,
      FEEDS_TEST_T0: String(t0),
      FEEDS_TEST_MONGO_URL: infra.mongoUrl,
      FEEDS_TEST_NATS_URL: infra.natsUrl,
      FEEDS_TEST_REDIS_URL: infra.redisUrl,
      FEEDS_MASTER_KEY: infra.masterKey,
      FEEDS_WEBHOOK_KEY: infra.webhookKey,
      BUILD_VERSION: infra.version,
    },
  });
  status = await new Promise((resolve) => vitest.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  await servers?.stop();
}

// The checks' verdicts (waited for if they still run); the helm build stops if no chart test ran.
const results = await checksDone;
if (k8sBuild && beside.size) {
  log("stopping the helm build: no chart test waits for it (Go keeps what it compiled)");
  stopBeside();
}
for (const r of results) {
  log(`${r.what}: ${r.ok ? "ok" : `FAILED (exit ${r.code})`}, ${r.seconds.toFixed(1)} s`);
  if (!r.ok && r.logFile) process.stderr.write(`--- ${rel(r.logFile)} ---\n${readFileSync(r.logFile, "utf8").trimEnd()}\n---\n`);
}
const failedChecks = results.filter((r) => !r.ok);
try {
  const f = JSON.parse(readFileSync(firstTest, "utf8"));
  log(`time to first test: ${f.seconds.toFixed(1)} s; whole run: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
} catch {
  /* no test started */
}
if (failedChecks.length) log(`checks failed: ${failedChecks.map((r) => r.what).join(", ")}`);
// One plain closing line for CI, whatever the reporter printed.
if (!testsRun) process.stdout.write(`${containers.skipped}\n0 passed, 0 failed\n`);
else {
  try {
    const r = JSON.parse(readFileSync(report, "utf8"));
    process.stdout.write(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped\n`);
  } catch {
    process.stdout.write("0 passed, 1 failed\n");
  }
}
process.exit(status || (failedChecks.length ? 1 : 0));
