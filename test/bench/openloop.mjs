// Open-loop HTTP load (issue 11 item 5), and the closed loop that measures the capacity it is a
// fraction of. Open loop: request i is due at t0 + i/rate whatever happened to the earlier ones,
// and its latency counts from that scheduled time, so a stall of the server shows as the waits of
// every request due during it (a closed loop, "next after the previous answered", would simply
// send fewer and hide it). One undici Pool with many keep-alive connections, so the client is not
// the queue: the figures say how often a due request found no free connection.
//
// A request mix is a module exporting `makers(args)` (may be async) →
// [{name, weight, request(n) → {method, path, headers?, body?}}]; each request picks a maker by
// weight (seeded, so runs send the same sequence), n counting that maker's requests from 0.
//
// In process: openLoop({url, rate, durationS, makers}) and closedLoop({url, connections,
// durationS, makers}). As its own process (so that it shares no event loop with the server):
//   node test/bench/openloop.mjs '{"url":…, "mix":{"module":…, "args":…}, "mode":"open"|"closed",
//     "rate":…, "connections":…, "durationS":…, "warmupS":…}'
// prints {"ready":true} once the mix is built, then one JSON line of figures; runLoad() below
// does that from a bench.
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { Pool } from "undici";

/** Sorted-array percentile (nearest rank). */
const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] : NaN);

/** mulberry32: a small seeded generator, so a mix is the same sequence run after run. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Requests made so far by each maker, across loads of one process (a warm-up, then the load): n
// never repeats for a maker.
const made = new WeakMap();

/** A function answering the next request of the mix: {maker name, method, path, headers, body}. */
function mixer(makers, seed = 1) {
  const total = makers.reduce((s, m) => s + m.weight, 0);
  const rand = rng(seed);
  return () => {
    let x = rand() * total;
    let i = 0;
    while (i < makers.length - 1 && x >= makers[i].weight) x -= makers[i++].weight;
    const n = made.get(makers[i]) ?? 0;
    made.set(makers[i], n + 1);
    const r = makers[i].request(n);
    const body = r.body === undefined || typeof r.body === "string" ? r.body : JSON.stringify(r.body);
    const headers = { ...(r.headers ?? {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) };
    return { name: makers[i].name, method: r.method ?? "GET", path: r.path, headers, body };
  };
}

function newPool(url, connections, timeoutMs) {
  return new Pool(url, { connections, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 60_000, connectTimeout: timeoutMs });
}

/** Answers of one load: counts by outcome, latencies of the 2xx, per maker too. */
function recorder(names) {
  const part = () => ({ sent: 0, ok: 0, shed: 0, other: 0, errors: 0, latencies: [] });
  const all = part();
  const byName = Object.fromEntries(names.map((n) => [n, part()]));
  const statuses = {};
  const errorKinds = {};
  let maxAnswerMs = 0;
  return {
    sent(name) {
      all.sent++;
      byName[name].sent++;
    },
    answer(name, status, ms) {
      statuses[status] = (statuses[status] ?? 0) + 1;
      maxAnswerMs = Math.max(maxAnswerMs, ms);
      for (const p of [all, byName[name]]) {
        if (status >= 200 && status < 300) {
          p.ok++;
          p.latencies.push(ms);
        } else if (status === 429 || status === 503) p.shed++;
        else p.other++;
      }
    },
    error(name, e, ms) {
      const k = e?.code ?? e?.name ?? "error";
      errorKinds[k] = (errorKinds[k] ?? 0) + 1;
      maxAnswerMs = Math.max(maxAnswerMs, ms);
      all.errors++;
      byName[name].errors++;
    },
    summary(seconds, extra = {}) {
      const sum = (p) => {
        const l = p.latencies.sort((a, b) => a - b);
        return { sent: p.sent, ok: p.ok, shed: p.shed, other: p.other, errors: p.errors, p50: pct(l, 50), p99: pct(l, 99), p999: pct(l, 99.9), max: l.at(-1) ?? NaN };
      };
      return {
        ...sum(all),
        seconds,
        statuses,
        errorKinds,
        // Longest wait for any answer (2xx, shed or error), from its scheduled or sent time.
        maxAnswerMs,
        byName: Object.fromEntries(Object.entries(byName).map(([k, p]) => [k, sum(p)])),
        ...extra,
      };
    },
  };
}

async function send(pool, req, timeoutMs) {
  const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  // The whole body, so that latency is until the last byte and the connection is free again.
  await res.body.arrayBuffer();
  return res.statusCode;
}

/**
 * Sends `rate` requests a second for `durationS` seconds on a fixed schedule. Latency is from each
 * request's scheduled time to the last byte of its answer; `goodput` is the 2xx answers completed
 * inside the schedule's window per second. `sendLag` is how late the client itself sent (its own
 * event loop), `clientQueued` the most requests that waited for a free connection: both near 0
 * when the client is not the bottleneck.
 * @param {{url:string, rate:number, durationS:number, makers:any[], connections?:number, timeoutMs?:number, seed?:number}} o
 */
export async function openLoop({ url, rate, durationS, makers, connections = 512, timeoutMs = 15_000, seed = 1 }) {
  const pool = newPool(url, connections, timeoutMs);
  const next = mixer(makers, seed);
  const rec = recorder(makers.map((m) => m.name));
  const total = Math.round(rate * durationS);
  const interval = 1000 / rate;
  const lags = [];
  let clientQueued = 0;
  let okInWindow = 0;
  const pending = new Set();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now() + 20;
  const end = t0 + durationS * 1000;
  const fire = (due) => {
    const req = next();
    rec.sent(req.name);
    const p = send(pool, req, timeoutMs).then(
      (status) => {
        const now = performance.now();
        rec.answer(req.name, status, now - due);
        if (status >= 200 && status < 300 && now <= end) okInWindow++;
      },
      (e) => rec.error(req.name, e, performance.now() - due),
    );
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  await new Promise((resolve) => {
    let i = 0;
    const tick = () => {
      const now = performance.now();
      while (i < total && t0 + i * interval <= now) {
        const due = t0 + i * interval;
        lags.push(now - due);
        fire(due);
        i++;
      }
      clientQueued = Math.max(clientQueued, pool.stats.pending);
      if (i >= total) return resolve();
      setTimeout(tick, Math.max(0, t0 + i * interval - performance.now() - 0.5));
    };
    setTimeout(tick, 20);
  });
  await Promise.allSettled([...pending]);
  const cpu = process.cpuUsage(cpu0);
  const wallS = (performance.now() - t0) / 1000;
  await pool.close();
  lags.sort((a, b) => a - b);
  return rec.summary(durationS, {
    mode: "open",
    rate,
    goodput: okInWindow / durationS,
    sendLag: { p99: pct(lags, 99), max: lags.at(-1) ?? NaN },
    clientQueued,
    connections,
    loadGeneratorCores: (cpu.user + cpu.system) / 1e6 / wallS,
  });
}

/**
 * `connections` loops, each sending its next request when the previous one answered, for
 * `durationS` seconds: the saturation throughput of the mix (`rps`, 2xx per second). Latency is
 * from the send.
 * @param {{url:string, connections:number, durationS:number, makers:any[], timeoutMs?:number, seed?:number}} o
 */
export async function closedLoop({ url, connections, durationS, makers, timeoutMs = 15_000, seed = 1 }) {
  const pool = newPool(url, connections, timeoutMs);
  const next = mixer(makers, seed);
  const rec = recorder(makers.map((m) => m.name));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + durationS * 1000;
  let okInWindow = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const req = next();
        const s = performance.now();
        rec.sent(req.name);
        try {
          const status = await send(pool, req, timeoutMs);
          const now = performance.now();
          rec.answer(req.name, status, now - s);
          if (status >= 200 && status < 300 && now <= end) okInWindow++;
        } catch (e) {
          rec.error(req.name, e, performance.now() - s);
        }
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const wallS = (performance.now() - t0) / 1000;
  await pool.close();
  return rec.summary(durationS, { mode: "closed", connections, rps: okInWindow / durationS, loadGeneratorCores: (cpu.user + cpu.system) / 1e6 / wallS });
}

/**
 * From a bench: one load in a process of its own (startNode of lib.mjs), with an optional
 * closed-loop warm-up first. Answers the figures of openLoop or closedLoop.
 * @param {{url:string, mix:{module:string, args?:any}, mode:"open"|"closed", rate?:number, connections?:number, durationS:number, warmupS?:number, timeoutMs?:number}} o
 */
export async function runLoad(o, { name = `openloop ${o.mode}` } = {}) {
  const { startNode } = await import("./lib.mjs");
  const w = startNode(new URL(import.meta.url).pathname, { args: [JSON.stringify(o)], name, timeoutMs: 120_000 });
  await w.ready;
  return w.result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const o = JSON.parse(process.argv[2] ?? "{}");
  const mod = await import(o.mix.module);
  const makers = await mod.makers(o.mix.args ?? {});
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  if (o.warmupS) await closedLoop({ url: o.url, connections: o.warmupConnections ?? 16, durationS: o.warmupS, makers, seed: 7 });
  const r =
    o.mode === "closed"
      ? await closedLoop({ url: o.url, connections: o.connections ?? 32, durationS: o.durationS, makers, timeoutMs: o.timeoutMs })
      : await openLoop({ url: o.url, rate: o.rate, durationS: o.durationS, makers, connections: o.connections, timeoutMs: o.timeoutMs });
  process.stdout.write(`${JSON.stringify(r)}\n`);
  process.exit(0);
}
