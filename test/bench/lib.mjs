// Shared helpers of `npm run bench`: child processes that announce themselves with a JSON line,
// RSS of process trees, percentiles, tokens, and the test namespace helpers.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cpus } from "node:os";
import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";

export const root = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
export const benchDir = join(root, "test", "bench");
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every child this run started, so that an interrupted run still stops them. */
export const started = new Set();

/**
 * Starts `node <file> ...args`; resolves with the first stdout line that parses as JSON and has
 * `ready: true` (the child's announcement). Later JSON lines go to `onJson`.
 */
export function startNode(file, { args = [], env = {}, nodeArgs = [], name = file, timeoutMs = 60_000, onJson } = {}) {
  const child = spawn(process.execPath, [...nodeArgs, file, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  child.once("exit", () => started.delete(child));
  const tail = [];
  child.stderr.on("data", (d) => {
    tail.push(String(d));
    if (tail.length > 40) tail.shift();
  });
  const lines = createInterface({ input: child.stdout });
  const jsonLines = [];
  let waiter = null;
  lines.on("line", (line) => {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    jsonLines.push(msg);
    onJson?.(msg);
    waiter?.();
  });
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not ready in ${timeoutMs} ms\n${tail.join("")}`)), timeoutMs);
    waiter = () => {
      const m = jsonLines.find((j) => j.ready);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.once("exit", (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? sig}) before it was ready\n${tail.join("")}`));
    });
  });
  ready.catch(() => undefined);
  /** Resolves with the last JSON line once the child has exited (0 required). */
  const result = new Promise((resolve, reject) => {
    child.once("exit", (code, sig) => {
      if (code === 0) resolve(jsonLines[jsonLines.length - 1]);
      else reject(new Error(`${name} exited (${code ?? sig})\n${tail.join("")}`));
    });
  });
  result.catch(() => undefined);
  const stop = () => stopChild(child);
  return { child, ready, result, stop, stderr: () => tail.join("") };
}

export function stopChild(child, signal = "SIGTERM") {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill(signal);
    setTimeout(() => child.kill("SIGKILL"), 5000).unref();
  });
}

/** Runs a child to completion and answers its last JSON line. */
export async function runNode(file, opts = {}) {
  const p = startNode(file, opts);
  return p.result;
}

export async function stopAllStarted() {
  await Promise.all([...started].map((c) => stopChild(c)));
}

/** VmRSS of one process in bytes (0 when it is gone). */
export function rssOf(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The pid and every descendant of it (via /proc/<pid>/task/<tid>/children). */
export function treeOf(pid) {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    const p = out[i];
    let tids = [];
    try {
      tids = readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      /* gone or no children file */
    }
    out.push(...tids);
  }
  return out;
}

export const MB = 1024 * 1024;

/** Sorted-array percentile (nearest rank). */
export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export async function serverToken(apiKey, apiSecret) {
  return new SignJWT({ server: true })
    .setProtectedHeader({ alg: "HS256", kid: apiKey })
    .setIssuedAt()
    .sign(new TextEncoder().encode(apiSecret));
}

/**
 * newNamespace / dropNamespace from test/support/namespace.ts. Node 20 cannot import TypeScript,
 * so the file is transpiled (types stripped, nothing else) into .cache/bench/ once per change.
 */
export async function namespaceHelpers() {
  const src = join(root, "test", "support", "namespace.ts");
  const outDir = join(root, ".cache", "bench");
  const out = join(outDir, "namespace.mjs");
  if (!existsSync(out) || statSync(out).mtimeMs < statSync(src).mtimeMs) {
    const ts = (await import("typescript")).default;
    const js = ts.transpileModule(readFileSync(src, "utf8"), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
      fileName: src,
    }).outputText;
    mkdirSync(outDir, { recursive: true });
    writeFileSync(out, js);
  }
  return import(out);
}

/** A small JSON HTTP client for setting the system up. */
export async function api(base, method, path, { token, body } = {}) {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return json;
}

function cpuTimes() {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + (f[4] ?? 0);
  return { idle, total: f.reduce((a, b) => a + b, 0) };
}

function allProcessCpu() {
  const out = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(Number(d), { comm, s: (Number(f[11]) + Number(f[12])) / CLK_TCK });
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Share of the machine's CPU (0–1, all cores) busy over `ms`: what else is running before a bench. */
export async function machineBusy(ms = 1000) {
  return (await machineActivity(ms)).busy;
}

/** As machineBusy, with the processes that used the most CPU meanwhile (cores each). */
export async function machineActivity(ms = 1000) {
  const a = cpuTimes();
  const pa = allProcessCpu();
  await sleep(ms);
  const b = cpuTimes();
  const pb = allProcessCpu();
  const top = [...pb]
    .map(([pid, x]) => ({ pid, comm: x.comm, cores: (x.s - (pa.get(pid)?.s ?? x.s)) / (ms / 1000) }))
    .filter((x) => x.cores > 0.02)
    .sort((x, y) => y.cores - x.cores)
    .slice(0, 4);
  return { busy: b.total > a.total ? 1 - (b.idle - a.idle) / (b.total - a.total) : 0, top };
}

const CLK_TCK = 100;
/** CPU seconds (user + system) a process has used so far; 0 when it is gone. */
export function cpuSecondsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

// Shared servers: their CPU may be ours or another user's; counted apart from "other work".
/** Shared servers by process name, each under the name its CPU is reported by. */
const INFRA_NAMES = { "ferretdb-launch": "ferretdb", ferretdb: "ferretdb", postgres: "postgres", mongod: "mongod", "redis-server": "redis", "nats-server": "nats" };
const INFRA = new Set(Object.keys(INFRA_NAMES));

/**
 * CPU seconds used so far by every process of the shared servers (ours and other users' work):
 * `total`, and `by` server (ferretdb, postgres, mongod, redis, nats).
 */
export function infraSecondsBy() {
  const by = {};
  let total = 0;
  for (const { comm, s } of allProcessCpu().values()) {
    const name = INFRA_NAMES[comm];
    if (!name) continue;
    by[name] = (by[name] ?? 0) + s;
    total += s;
  }
  return { total, by };
}

/**
 * Starts measuring CPU use of `pids` and of the whole machine; `end()` answers cores used, plus
 * `otherCores`: CPU of processes that are neither this bench's process tree nor shared infra
 * (other people's builds and tests on the same machine), with the top ones.
 */
export function cpuMeter(pids) {
  const t0 = Date.now();
  const m0 = cpuTimes();
  const p0 = pids.map(cpuSecondsOf);
  const all0 = allProcessCpu();
  return {
    end() {
      const s = (Date.now() - t0) / 1000;
      const m1 = cpuTimes();
      const all1 = allProcessCpu();
      const ours = new Set(treeOf(process.pid));
      const busy = m1.total > m0.total ? 1 - (m1.idle - m0.idle) / (m1.total - m0.total) : 0;
      const others = [];
      let infraCores = 0;
      for (const [pid, x] of all1) {
        if (ours.has(pid)) continue;
        const cores = (x.s - (all0.get(pid)?.s ?? x.s)) / s;
        if (cores <= 0) continue;
        if (INFRA.has(x.comm)) infraCores += cores;
        else others.push({ pid, comm: x.comm, cores });
      }
      others.sort((a, b) => b.cores - a.cores);
      return {
        seconds: s,
        processCores: pids.map((p, i) => (cpuSecondsOf(p) - p0[i]) / s),
        machineCores: busy * cpus().length,
        infraCores,
        otherCores: others.reduce((a, b) => a + b.cores, 0),
        otherTop: others.slice(0, 3),
      };
    },
  };
}

/**
 * dropNamespace, made robust: it stops at its first failure (MongoDB down, say) and would leave
 * the namespace's NATS streams and Redis keys behind. Retries a few times, then removes what it
 * can part by part and throws with what is left.
 */
export async function dropNamespaceSafely(ns, urls, log) {
  const { dropNamespace } = await namespaceHelpers();
  let last;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await dropNamespace(ns, urls);
      return;
    } catch (e) {
      last = e;
      log?.(`  dropNamespace ${ns} (attempt ${attempt}): ${e.message}`);
      await sleep(2000 * attempt);
    }
  }
  const left = [];
  try {
    const { connect } = await import("nats");
    const nc = await connect({ servers: urls.natsUrl });
    try {
      const jsm = await nc.jetstreamManager();
      for await (const s of jsm.streams.list()) {
        if (s.config.name.startsWith(`${ns}_`)) await jsm.streams.delete(s.config.name);
      }
    } finally {
      await nc.drain();
    }
  } catch (e) {
    left.push(`NATS streams (${e.message})`);
  }
  try {
    const { Redis } = await import("ioredis");
    const redis = new Redis(urls.redisUrl);
    try {
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", `${ns}:*`, "COUNT", 500);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== "0");
    } finally {
      redis.disconnect();
    }
  } catch (e) {
    left.push(`Redis keys (${e.message})`);
  }
  throw new Error(`namespace ${ns} not fully dropped: MongoDB database (${last?.message})${left.length ? `, ${left.join(", ")}` : ""}`);
}

/** The environment of a system a bench starts on the shared servers, in its own namespace. */
export function systemEnv(infra, namespace, extra = {}) {
  return {
    MONGO_URL: infra.mongoUrl,
    NATS_URL: infra.natsUrl,
    REDIS_URL: infra.redisUrl,
    FEEDS_MASTER_KEY: infra.masterKey,
    FEEDS_WEBHOOK_KEY: infra.webhookKey,
    BUILD_VERSION: infra.version,
    FEEDS_NAMESPACE: namespace,
    BOOTSTRAP_STAFF_EMAIL: `staff@${namespace.replace(/_/g, "-")}.bench`,
    BOOTSTRAP_STAFF_PASSWORD: randomBytes(16).toString("base64url"),
    LOG_LEVEL: "warn",
    ...extra,
  };
}

/**
 * The figures of a load generator's targets from their accumulators ({latencies, roundRps,
 * seconds, sent?, non2xx, errors, timeouts, statuses, cpuS}).
 */
export function summarizeTargets(targets, acc) {
  const out = {};
  for (const t of targets) {
    const a = acc[t.name];
    a.latencies.sort((x, y) => x - y);
    const rounds = [...a.roundRps].sort((x, y) => x - y);
    out[t.name] = {
      rps: a.latencies.length / a.seconds,
      medianRoundRps: percentile(rounds, 50),
      roundRps: a.roundRps,
      p50: percentile(a.latencies, 50),
      p99: percentile(a.latencies, 99),
      ok: a.latencies.length,
      ...(a.sent === undefined ? {} : { sent: a.sent }),
      non2xx: a.non2xx,
      errors: a.errors,
      timeouts: a.timeouts,
      statuses: a.statuses,
      seconds: a.seconds,
      // CPU this load generator used while loading this target, in cores.
      loadGeneratorCores: a.cpuS / a.seconds,
      // Seconds waited for a quiet machine before its rounds (`quiet`), and the waits that ran out.
      ...(a.quietS === undefined ? {} : { quietS: a.quietS, quietTimeouts: a.quietTimeouts }),
    };
  }
  return out;
}

/** Serves a bare Fastify app on loopback, announces its URL, and closes it (and `client`) on a signal. */
export async function serveBare(app, client) {
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  process.stdout.write(`${JSON.stringify({ ready: true, url: address })}\n`);
  const stop = async () => {
    await app.close();
    await client.close();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}

/** The MongoDB client of a bare floor route, with the driver options of @feeds/kit's connectMongo. */
export async function bareMongo() {
  const { MongoClient } = await import("mongodb");
  const client = new MongoClient(process.env.MONGO_URL, {
    serverSelectionTimeoutMS: 2000,
    connectTimeoutMS: 2000,
    maxPoolSize: 50,
    retryWrites: false,
  });
  await client.connect();
  return client;
}

/** Environment that preloads the CPU profiler SIGUSR2 toggles (cpu-profile-preload.mjs); none without a directory. */
export const profilerEnv = (cpuProfDir) =>
  cpuProfDir ? { NODE_OPTIONS: `--import=${join(benchDir, "cpu-profile-preload.mjs")}`, BENCH_CPU_PROF_DIR: cpuProfDir } : {};

/**
 * MongoDB commands a process's driver has started for `work` (a route template such as
 * `GET /v1/feeds/:group/:id`), by command name: feeds_mongodb_commands_total of its Prometheus
 * endpoint (kit's metrics, command monitoring). `total` sums them.
 */
export async function mongoCommands(metricsUrl, work) {
  const text = await (await fetch(metricsUrl)).text();
  const byName = {};
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("feeds_mongodb_commands_total{") || !line.includes(`work="${work}"`)) continue;
    const n = Number(line.slice(line.lastIndexOf(" ") + 1));
    const name = /command="([^"]*)"/.exec(line)?.[1] ?? "?";
    byName[name] = (byName[name] ?? 0) + n;
    total += n;
  }
  return { total, byName };
}

/** Commands of `after` minus those of `before` (two mongoCommands answers). */
export function commandsSince(before, after) {
  const byName = {};
  for (const [k, n] of Object.entries(after.byName)) if (n - (before.byName[k] ?? 0) > 0) byName[k] = n - (before.byName[k] ?? 0);
  return { total: after.total - before.total, byName };
}
