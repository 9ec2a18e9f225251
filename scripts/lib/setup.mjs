// Set-up shared by `npm start`, `npm test` and `npm run bench`: install what is missing, build,
// make sure MongoDB-wire storage, NATS JetStream and Redis are listening.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";

export const root = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
export const log = (...a) => process.stderr.write(`[feeds] ${a.join(" ")}\n`);

/** What each set-up step cost, in the order they ran: { step, seconds }. */
export const costs = [];

/** Runs one set-up step (sync or async) and logs, and keeps in `costs`, what it cost. */
export async function timed(step, fn) {
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    const seconds = (performance.now() - t0) / 1000;
    costs.push({ step, seconds });
    log(`${step}: ${seconds.toFixed(1)} s`);
  }
}

export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${r.status ?? r.signal})`);
  }
  return r;
}

/** As run(), without holding up the event loop: other set-up steps go on meanwhile. */
export function runAsync(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, stdio: "inherit", ...opts });
    child.once("error", reject);
    child.once("exit", (code, signal) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(" ")} failed (exit ${code ?? signal})`))));
  });
}

const installNeeded = () => {
  const marker = join(root, "node_modules", ".package-lock.json");
  const lock = join(root, "package-lock.json");
  return !existsSync(marker) || statSync(marker).mtimeMs < statSync(lock).mtimeMs;
};

/**
 * `npm install` (from the lock file) when node_modules is missing or older than the lock file.
 * Not `npm ci`: the registry here serves only the linux-x64 build of buf's optional platform
 * packages, so the lock cannot list the others and `npm ci` refuses it.
 */
export function ensureInstalled() {
  if (!installNeeded()) return;
  log("installing dependencies (npm install)…");
  run("npm", ["install", "--no-audit", "--no-fund"]);
}

async function ensureInstalledAsync() {
  if (!installNeeded()) return;
  log("installing dependencies (npm install)…");
  await runAsync("npm", ["install", "--no-audit", "--no-fund"]);
}


/** A 32-byte key from the environment, else one kept under .cache/ (made on first use). */
function keptKey(variable, fileName) {
  if (process.env[variable]) return process.env[variable];
  const file = join(root, ".cache", fileName);
  if (!existsSync(file)) {
    mkdirSync(join(root, ".cache"), { recursive: true });
    writeFileSync(file, randomBytes(32).toString("base64"), { mode: 0o600 });
  }
  return readFileSync(file, "utf8").trim();
}

/** The key that encrypts tenant secrets at rest: FEEDS_MASTER_KEY, else .cache/master.key. */
export const masterKey = () => keptKey("FEEDS_MASTER_KEY", "master.key");

/** The key that encrypts webhook signing secrets at rest: FEEDS_WEBHOOK_KEY, else .cache/webhook.key. */
export const webhookKey = () => keptKey("FEEDS_WEBHOOK_KEY", "webhook.key");

/** The root of the service keys (docs/service-auth.md): FEEDS_INTERNAL_KEY, else .cache/internal.key. */
export const internalKey = () => keptKey("FEEDS_INTERNAL_KEY", "internal.key");

/** The running build: package version, commit and whether the tree had changes. */
export function buildVersion() {
  if (process.env.BUILD_VERSION) return process.env.BUILD_VERSION;
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const sha = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).stdout?.trim();
  const dirty = spawnSync("git", ["status", "--porcelain"], { cwd: root, encoding: "utf8" }).stdout?.trim();
  return `${pkg.version}+${sha || "nogit"}${dirty ? ".dirty" : ""}`;
}

const hasPromtool = () => spawnSync("promtool", ["--version"], { stdio: "ignore" }).status === 0;

/**
 * promtool, for the alert-rule checks: Debian's `prometheus` package ships it (2.42 on bookworm).
 * Installed when missing (about 10 s with fresh package lists); `apt-get update` first only if
 * the install fails on old lists.
 */
export function ensurePromtool() {
  if (hasPromtool()) return;
  log("installing promtool (apt-get install prometheus)…");
  // Not root (a CI runner's user): through passwordless sudo where there is one.
  const asRoot = process.getuid?.() === 0 ? [] : ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"];
  const apt = (...args) =>
    spawnSync(asRoot[0] ?? "apt-get", [...asRoot.slice(1), ...(asRoot.length ? ["apt-get"] : []), ...args], {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    }).status === 0;
  const install = () => apt("install", "-y", "--no-install-recommends", "prometheus");
  if (!install() && !(apt("update") && install())) {
    throw new Error("promtool is missing and `apt-get install prometheus` failed (no package manager, not root, or no registry): install promtool and run again");
  }
  if (!hasPromtool()) throw new Error("the prometheus package installed no promtool on PATH");
}

/** The Prometheus alert rules parse (`promtool check rules`) and fire as their unit tests say. */
export function checkAlertRules() {
  ensurePromtool();
  log("alert rules (promtool)");
  run("promtool", ["check", "rules", "deploy/helm/feeds/files/alerts.yaml"]);
  run("promtool", ["test", "rules", "deploy/helm/feeds/files/alerts.test.yaml"]);
}

export async function ensureInfrastructure() {
  const { ensureInfra } = await import("../infra.mjs");
  const { describeServers } = await import("./started-servers.mjs");
  const infra = await ensureInfra({ root, log });
  for (const line of describeServers(infra.servers)) log(line);
  return infra;
}

/**
 * Everything before the system can start, each step timed; `servers: false` leaves the servers
 * to the caller. The servers (which include building the FerretDB launcher when it has to start:
 * Go, no npm package) come up while the dependencies install and the workspaces build.
 */
export async function setup({ skipBuild = false, servers = true } = {}) {
  const serversReady = servers ? timed("servers (MongoDB wire, NATS, Redis)", () => ensureInfrastructure()) : Promise.resolve({});
  const built = (async () => {
    await timed("dependencies (npm install when package-lock.json is newer)", () => ensureInstalledAsync());
    if (!skipBuild) {
      await timed("build (tsc -b)", () => {
        log("building (tsc -b)…");
        return runAsync(join(root, "node_modules", ".bin", "tsc"), ["-b"]);
      });
      // The operator console the gateway serves at /console (Vite; after tsc: it bundles
      // @feeds/client's dist). It prints its gzipped size and fails over its limit.
      await timed("operator console (vite build)", () => runAsync(process.execPath, [join(root, "console", "scripts", "build.mjs")]));
    }
  })();
  // Both settle before either's failure is thrown: no step is left running behind an error.
  const [urls, done] = await Promise.allSettled([serversReady, built]);
  if (urls.status === "rejected") throw urls.reason;
  if (done.status === "rejected") throw done.reason;
  return { ...urls.value, masterKey: masterKey(), webhookKey: webhookKey(), internalKey: internalKey(), version: buildVersion() };
}
