// `npm test`: the same set-up as `npm start`, then every check and every test. Each step says what
// it cost; the first test says how long after the start it began.
// TEST_INFRA=containers: the tests run on MongoDB, NATS and Redis in containers (lib/containers.mjs).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import { prepareContainers, testInfraMode } from "./lib/containers.mjs";
import { checkAlertRules, costs, ensureInstalled, log, root, run, setup, timed } from "./lib/setup.mjs";

const t0 = Date.now();
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

// helm and the manifest checker (scripts/k8s-check) serve the chart test alone, which runs last
// (vitest project `deploy`): they build in the background meanwhile, at low priority, cached
// under .cache/k8s-check/ (a cold build takes minutes). The chart test waits for this build or,
// should it fail, builds them itself and fails with the error.
const k8sLog = join(root, ".cache", "k8s-check", "build.log");
let k8sBuild = null;
if (testsRun) {
  mkdirSync(join(root, ".cache", "k8s-check"), { recursive: true });
  const out = openSync(k8sLog, "w");
  const started = Date.now();
  const child = spawn(process.execPath, [join(root, "scripts", "k8s-check", "tools.mjs")], { cwd: root, detached: true, stdio: ["ignore", out, out] });
  try {
    setPriority(child.pid, 10);
  } catch {
    /* the build just runs at normal priority */
  }
  k8sBuild = { child, done: false };
  child.once("exit", (code) => {
    k8sBuild.done = true;
    const s = ((Date.now() - started) / 1000).toFixed(1);
    log(code === 0 ? `helm and the manifest checker ready (background, ${s} s)` : `helm and the manifest checker: background build failed (exit ${code}, ${s} s; ${k8sLog}); the chart test builds them itself`);
  });
  log(`building helm and the manifest checker in the background (pid ${child.pid}, log ${k8sLog.replace(`${root}/`, "")})`);
}
/** Stops the background build if it still runs (no chart test waits for it); Go keeps what it compiled. */
function stopBackgroundBuild() {
  if (!k8sBuild || k8sBuild.done) return;
  log(`stopping the background helm build (pid ${k8sBuild.child.pid}): no chart test waits for it`);
  try {
    process.kill(-k8sBuild.child.pid, "SIGTERM"); // its process group: the node script and go build
  } catch {
    /* it ended meanwhile */
  }
}
process.once("SIGINT", () => {
  stopBackgroundBuild();
  process.exit(130);
});

await timed("proto checks (buf lint, generated code, buf breaking)", () => run(process.execPath, [join(root, "scripts", "check-proto.mjs")]));
const tsc = join(root, "node_modules", ".bin", "tsc");
await timed("type-checking the tests", () => {
  run(tsc, ["-p", "test", "--noEmit"]);
  const serviceTests = readdirSync(join(root, "services")).map((s) => `services/${s}/test`);
  for (const dir of ["sdk/test", "kit/test", "gateway/test", "system/test", ...serviceTests]) {
    if (existsSync(join(root, dir, "tsconfig.json"))) run(tsc, ["-p", dir, "--noEmit"]);
  }
});
await timed("eslint", () => run(join(root, "node_modules", ".bin", "eslint"), ["--max-warnings", "0", "."]));
await timed("alert rules (promtool)", () => checkAlertRules());
if (!testsRun) {
  process.stdout.write(`${containers.skipped}\n0 passed, 0 failed\n`);
  process.exit(0);
}
const servers = containers ? await timed("containers", () => containers.start({ log })) : null;
if (servers) Object.assign(infra, { mongoUrl: servers.mongoUrl, natsUrl: servers.natsUrl, redisUrl: servers.redisUrl });
log(`set-up before the tests: ${costs.map((c) => `${c.step.replace(/ \(.*/, "")} ${c.seconds.toFixed(1)} s`).join(", ")}; ${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
log("vitest");
const report = join(root, ".cache", "vitest-report.json");
const firstTest = join(root, ".cache", "first-test.json");
rmSync(firstTest, { force: true });
const passedThrough = process.argv.slice(2);
const reporters = ["--reporter=default", "--reporter=json", `--outputFile.json=${report}`, `--reporter=${join(root, "scripts", "lib", "first-test-reporter.mjs")}`];
const vitest = spawn(join(root, "node_modules", ".bin", "vitest"), ["run", ...reporters, ...passedThrough], {
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
const status = await new Promise((resolve) => vitest.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
await servers?.stop();
stopBackgroundBuild();
try {
  const f = JSON.parse(readFileSync(firstTest, "utf8"));
  log(`time to first test: ${f.seconds.toFixed(1)} s; whole run: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
} catch {
  /* no test started */
}
// One plain closing line for CI, whatever the reporter printed.
try {
  const r = JSON.parse(readFileSync(report, "utf8"));
  process.stdout.write(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped\n`);
} catch {
  process.stdout.write("0 passed, 1 failed\n");
}
process.exit(status);
