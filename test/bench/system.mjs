// What the benches that run their own one-process system share (benches 6 to 12): the system on a
// fresh namespace with one tenant, set-up helpers, and loading targets from load-worker.mjs with
// the CPU of each target's server and of the shared servers over that target's rounds.
import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SignJWT } from "jose";
import { MongoClient } from "mongodb";
import { Redis } from "ioredis";
import { connect } from "nats";
import { startSystem } from "../../scripts/lib/system.mjs";
import { api, benchDir, profilerEnv, systemEnv, cpuMeter, cpuSecondsOf, dropNamespaceSafely, infraSecondsBy, namespaceHelpers, serverToken, sleep, startNode, started } from "./lib.mjs";

export const range = (a, b) => (b === undefined ? [...Array(a).keys()] : [...Array(Math.max(0, b - a)).keys()].map((i) => a + i));

/** Runs `fn(i)` for i in [0, n) with at most `width` at a time. */
export async function pool(n, width, fn) {
  let next = 0;
  await Promise.all(
    range(Math.min(width, n)).map(async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** CPU seconds used so far by every process of the shared servers (ours and other users' work). */
export const infraSeconds = () => infraSecondsBy().total;

/**
 * Starts a one-process system on a fresh namespace with one tenant (rate limit at the API's
 * maximum, so that the load measures the path rather than 429s), runs `fn`, then stops everything
 * and drops the namespace. The system's processes join lib's `started` set, so that an
 * interrupted `npm run bench` stops them too.
 */
export async function withSystem(infra, log, label, fn, { cpuProfDir, env: extraEnv = {} } = {}) {
  const { newNamespace } = await namespaceHelpers();
  const namespace = newNamespace("bench");
  // With a profile directory the gateway preloads the profiler that SIGUSR2 starts and stops.
  const env = systemEnv(infra, namespace, { ...profilerEnv(cpuProfDir), ...extraEnv });
  const helpers = [];
  let system;
  let mongo;
  let redis;
  let nc;
  try {
    log(`${label}: starting the one-process system (namespace ${namespace}); load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    system = await startSystem({ env });
    for (const p of system.processes) {
      started.add(p.child);
      p.child.once("exit", () => started.delete(p.child));
    }
    const { token: staffToken } = await api(system.url, "POST", "/operator/login", {
      body: { email: env.BOOTSTRAP_STAFF_EMAIL, password: env.BOOTSTRAP_STAFF_PASSWORD },
    });
    const created = await api(system.url, "POST", "/admin/tenants", {
      token: staffToken,
      body: { name: label, rate_limit_per_minute: 10_000_000 },
    });
    const tenant = {
      id: created.tenant.id,
      apiKey: created.tenant.api_key,
      secret: created.api_secret,
      token: await serverToken(created.tenant.api_key, created.api_secret),
    };
    mongo = new MongoClient(infra.mongoUrl, { serverSelectionTimeoutMS: 3000, maxPoolSize: 8, retryWrites: false });
    await mongo.connect();
    redis = new Redis(infra.redisUrl);
    nc = await connect({ servers: infra.natsUrl });
    const jsm = await nc.jetstreamManager();
    return await fn({
      system,
      url: system.url,
      namespace,
      tenant,
      db: mongo.db(namespace),
      redis,
      jsm,
      gatewayPid: system.processes.at(-1)?.child.pid,
      helper: (h) => {
        helpers.push(h);
        return h;
      },
      loadAverage: loadavg()[0],
    });
  } finally {
    for (const h of helpers) await h.stop().catch(() => undefined);
    await system?.stop();
    await mongo?.close().catch(() => undefined);
    redis?.disconnect();
    await nc?.drain().catch(() => undefined);
    await dropNamespaceSafely(namespace, infra, log).catch((e) => log(`  ${e.message}`));
  }
}

/**
 * The gateway's Prometheus scrape after a bench's rounds, cut to what an operator looks at first:
 * request latency of the feed routes, queue depths and fan-out lag (issue 10's closing note).
 */
export async function metricsExcerpt(system) {
  const text = await (await fetch(system.metrics.gateway)).text();
  const wanted = (l) =>
    (l.startsWith("feeds_http_request_duration_seconds") && l.includes('route="/v1/feeds/:group/:id')) ||
    l.startsWith("feeds_queue_pending_messages") ||
    l.startsWith("feeds_queue_dlq_depth") ||
    l.startsWith("feeds_queue_redelivered_messages") ||
    l.startsWith("feeds_fanout_lag_seconds");
  return text.split("\n").filter(wanted).join("\n");
}

/**
 * Garbage collection in the system's process so far, by kind (major, minor, incremental,
 * weakcb): count, seconds, and how many took longer than 10 and 100 ms (prom-client's
 * nodejs_gc_duration_seconds); with `eventLoopMaxS`, the longest event-loop delay since the
 * previous scrape (prom-client resets its delay histogram on every scrape).
 */
export async function gcSnapshot(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const byKind = {};
  let eventLoopMaxS = null;
  for (const line of text.split("\n")) {
    const m = /^nodejs_gc_duration_seconds_(count|sum|bucket)\{(?:le="([^"]+)",)?kind="([^"]+)"\} ([0-9.e+-]+)$/.exec(line);
    if (m) {
      const [, what, le, kind, value] = m;
      const k = (byKind[kind] ??= { count: 0, seconds: 0, under10ms: 0, under100ms: 0 });
      if (what === "count") k.count = Number(value);
      if (what === "sum") k.seconds = Number(value);
      if (what === "bucket" && le === "0.01") k.under10ms = Number(value);
      if (what === "bucket" && le === "0.1") k.under100ms = Number(value);
      continue;
    }
    const lag = /^nodejs_eventloop_lag_max_seconds ([0-9.e+-]+)$/.exec(line);
    if (lag) eventLoopMaxS = Number(lag[1]);
  }
  return { byKind, eventLoopMaxS };
}

/** What `gcSnapshot` says happened between two snapshots, one line. */
export function gcBetween(a, b) {
  const parts = Object.entries(b.byKind).map(([kind, x]) => {
    const y = a.byKind[kind] ?? { count: 0, seconds: 0, under10ms: 0, under100ms: 0 };
    const n = x.count - y.count;
    const over10 = n - (x.under10ms - y.under10ms);
    const over100 = n - (x.under100ms - y.under100ms);
    return `${kind} ${n} (${((x.seconds - y.seconds) * 1000).toFixed(0)} ms; ${over10} over 10 ms, ${over100} over 100 ms)`;
  });
  return `${parts.join(", ")}; longest event-loop delay ${b.eventLoopMaxS === null ? "?" : (b.eventLoopMaxS * 1000).toFixed(0)} ms`;
}

export const userToken = (tenant, userId) =>
  new SignJWT({ user_id: userId })
    .setProtectedHeader({ alg: "HS256", kid: tenant.apiKey })
    .setIssuedAt()
    .setExpirationTime("2h")
    .sign(new TextEncoder().encode(tenant.secret));

export async function batch(c, path, key, items) {
  const res = await api(c.url, "POST", path, { token: c.tenant.token, body: { [key]: items } });
  const bad = res.results.filter((r) => !r.ok);
  if (bad.length) throw new Error(`${path}: ${bad.length} of ${items.length} items failed (${JSON.stringify(bad[0])})`);
}

/** Polls `check` every `everyMs` until it answers truthy; answers that value. */
export async function until(what, check, { everyMs = 100, timeoutMs = 120_000 } = {}) {
  const t0 = Date.now();
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}: not done in ${timeoutMs / 1000} s`);
    await sleep(everyMs);
  }
}

/** Copies the secondary indexes of `from` onto `to` (the launcher adds GIN companions to both). */
export async function copyIndexes(db, from, to) {
  for (const i of await db.collection(from).indexes()) {
    if (i.name !== "_id_") await db.collection(to).createIndex(i.key, { name: i.name });
  }
}

/**
 * Loads `targets` from load-worker.mjs; adds to each target the CPU its server process and the
 * shared servers used over that target's own rounds, and to the whole the machine's CPU use.
 * @param {{name:string, url:string, pid:number, [k:string]:any}[]} targets
 */
/**
 * The `quiet` option of `load` for a bench whose system rounds leave background work (queues,
 * relays) and take turns with a floor: each round starts once the system's process and the shared
 * servers together use less than 0.15 cores (at most 20 s), so neither's round pays for the
 * other's leftovers.
 */
export const QUIET = (c) => ({ pids: [c.gatewayPid].filter(Boolean), cores: 0.15, maxMs: 20_000 });

/**
 * --cpu-prof over a bench's whole load: the one-process system's profiler runs while `run()` does
 * (the floor's rounds included, when the system idles but for its background work). Answers
 * `run()`'s result and the profile's path (undefined without a profile directory).
 */
export async function profiledLoad(c, cpuProfDir, log, run) {
  const profiling = Boolean(cpuProfDir && c.gatewayPid);
  if (profiling) process.kill(c.gatewayPid, "SIGUSR2");
  const r = await run();
  if (!profiling) return { r, cpuProfile: undefined };
  process.kill(c.gatewayPid, "SIGUSR2");
  await sleep(1000);
  const cpuProfile = join(cpuProfDir, `gateway-${c.gatewayPid}.cpuprofile`);
  log(`  CPU profile of the system over the load: ${cpuProfile}`);
  return { r, cpuProfile };
}

export async function load(targets, o, hooks = {}) {
  const pidOf = Object.fromEntries(targets.map((t) => [t.name, t.pid]));
  const perTarget = Object.fromEntries(targets.map((t) => [t.name, { serverS: 0, infraS: 0, wallS: 0, serverAllS: 0, infraAllS: 0, infraBy: {} }]));
  let meter = null;
  let round = null;
  let chain = Promise.resolve();
  const onJson = (m) => {
    if (m.phase === "measure" && !meter) meter = cpuMeter(targets.map((t) => t.pid));
    if (m.phase === "round") {
      round = { t: performance.now(), server: cpuSecondsOf(pidOf[m.target]), infra: infraSecondsBy() };
      if (hooks.onRound) (chain = chain.then(() => hooks.onRound(m))).catch(() => undefined);
    }
    if (m.phase === "roundEnd" && round) {
      const p = perTarget[m.target];
      p.serverS += cpuSecondsOf(pidOf[m.target]) - round.server;
      p.infraS += infraSeconds() - round.infra.total;
      p.wallS += (performance.now() - round.t) / 1000;
      if (hooks.onRoundEnd) (chain = chain.then(() => hooks.onRoundEnd(m))).catch(() => undefined);
    }
    if (m.phase === "settled" && round) {
      // Work on the requests abandoned at the end of the round included (per request sent).
      const p = perTarget[m.target];
      p.serverAllS += cpuSecondsOf(pidOf[m.target]) - round.server;
      const infra = infraSecondsBy();
      p.infraAllS += infra.total - round.infra.total;
      for (const [name, s] of Object.entries(infra.by)) p.infraBy[name] = (p.infraBy[name] ?? 0) + s - (round.infra.by[name] ?? 0);
      round = null;
    }
  };
  const w = startNode(join(benchDir, "load-worker.mjs"), {
    args: [JSON.stringify({ ...o, targets: targets.map(({ pid: _pid, ...t }) => t) })],
    name: "load-worker",
    onJson,
  });
  const r = await w.result;
  await chain;
  const cpu = meter?.end();
  if (cpu) r.machine = { machineCores: cpu.machineCores, infraCores: cpu.infraCores, otherCores: cpu.otherCores, otherTop: cpu.otherTop };
  for (const t of targets) {
    const x = r.targets[t.name];
    const p = perTarget[t.name];
    x.cpu = {
      // Cores while the target's rounds ran; CPU per request from the round's start until its
      // abandoned requests were done, over the requests sent.
      serverCores: p.serverS / p.wallS,
      serverCpuMsPerRequest: (p.serverAllS * 1000) / x.sent,
      infraCores: p.infraS / p.wallS,
      infraCpuMsPerRequest: (p.infraAllS * 1000) / x.sent,
      // The same by server (ferretdb, postgres, redis, nats): where the storage work went.
      infraCpuMsPerRequestBy: Object.fromEntries(Object.entries(p.infraBy).map(([name, s]) => [name, Number(((s * 1000) / x.sent).toFixed(3))])),
      loadGeneratorCores: x.loadGeneratorCores,
    };
  }
  return r;
}

/** CPU per request by shared server (`infraCpuMsPerRequestBy`), one line: "postgres 0.53, ferretdb 0.77". */
export const serversText = (by) =>
  Object.entries(by)
    .filter(([, ms]) => ms >= 0.005)
    .map(([name, ms]) => `${name} ${ms.toFixed(2)}`)
    .join(", ") || "none";

export const fmt = (x) =>
  `${x.rps.toFixed(0)} req/s (rounds ${x.roundRps.map((v) => v.toFixed(0)).join(", ")}), p50 ${x.p50.toFixed(2)} ms, p99 ${x.p99.toFixed(2)} ms; ` +
  `server ${(x.cpu.serverCores * 100).toFixed(0)}% core (${x.cpu.serverCpuMsPerRequest.toFixed(2)} ms CPU/req), ` +
  `shared servers ${(x.cpu.infraCores * 100).toFixed(0)}% (${x.cpu.infraCpuMsPerRequest.toFixed(2)} ms CPU/req: ` +
  `${serversText(x.cpu.infraCpuMsPerRequestBy)})` +
  (x.quietS === undefined ? "" : `; waited ${x.quietS.toFixed(1)} s for a quiet machine before its rounds${x.quietTimeouts ? ` (${x.quietTimeouts} waits ran out)` : ""}`) +
  (x.non2xx || x.errors ? `; ${x.non2xx} non-2xx, ${x.errors} errors ${JSON.stringify(x.statuses)}` : "");

export const machineNote = (m) =>
  m
    ? `machine over the rounds: ${m.machineCores.toFixed(2)} cores busy; shared servers ${m.infraCores.toFixed(2)}; other people's work ${m.otherCores.toFixed(2)} cores` +
      (m.otherTop.length ? ` (${m.otherTop.map((x) => `${x.comm}[${x.pid}] ${(x.cores * 100).toFixed(0)}%`).join(", ")})` : "")
    : "no machine figures";

