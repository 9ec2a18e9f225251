// `npm test`: the same set-up as `npm start`, then every check and every test.
// TEST_INFRA=containers: the tests run on MongoDB, NATS and Redis in containers (lib/containers.mjs).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { prepareContainers, testInfraMode } from "./lib/containers.mjs";
import { checkAlertRules, ensureInstalled, log, root, run, setup } from "./lib/setup.mjs";
import { buildK8sTools } from "./k8s-check/tools.mjs";

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
  containers = await prepareContainers();
  log("skipped" in containers ? `${containers.skipped}: the checks run, no test does` : `container engine: ${containers.engine}`);
}
const infra = await setup({ servers: mode === "local" });
run(process.execPath, [join(root, "scripts", "check-proto.mjs")]);
log("type-checking the tests");
const tsc = join(root, "node_modules", ".bin", "tsc");
run(tsc, ["-p", "test", "--noEmit"]);
const serviceTests = readdirSync(join(root, "services")).map((s) => `services/${s}/test`);
for (const dir of ["sdk/test", "kit/test", "gateway/test", "system/test", ...serviceTests]) {
  if (existsSync(join(root, dir, "tsconfig.json"))) run(tsc, ["-p", dir, "--noEmit"]);
}
// The chart test's helm and manifest checker: built here (once, then cached under .cache/) so
// that a cold Go build does not run beside the tests.
await buildK8sTools({ root, log: (m) => log(m) });
log("eslint");
run(join(root, "node_modules", ".bin", "eslint"), ["--max-warnings", "0", "."]);
checkAlertRules();
if (containers && "skipped" in containers) {
  process.stdout.write(`${containers.skipped}\n0 passed, 0 failed\n`);
  process.exit(0);
}
const servers = containers ? await containers.start({ log }) : null;
if (servers) Object.assign(infra, { mongoUrl: servers.mongoUrl, natsUrl: servers.natsUrl, redisUrl: servers.redisUrl });
log("vitest");
const report = join(root, ".cache", "vitest-report.json");
const passedThrough = process.argv.slice(2);
const vitest = spawnSync(join(root, "node_modules", ".bin", "vitest"), ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...passedThrough], {
  cwd: root,
  stdio: "inherit",
  env: {
    ...process.env,
    FEEDS_TEST_MONGO_URL: infra.mongoUrl,
    FEEDS_TEST_NATS_URL: infra.natsUrl,
    FEEDS_TEST_REDIS_URL: infra.redisUrl,
    FEEDS_MASTER_KEY: infra.masterKey,
    FEEDS_WEBHOOK_KEY: infra.webhookKey,
    BUILD_VERSION: infra.version,
  },
});
await servers?.stop();
// One plain closing line for CI, whatever the reporter printed.
try {
  const r = JSON.parse(readFileSync(report, "utf8"));
  process.stdout.write(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped\n`);
} catch {
  process.stdout.write("0 passed, 1 failed\n");
}
process.exit(vitest.status ?? 1);
