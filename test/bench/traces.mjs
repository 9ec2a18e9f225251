// What tracing costs on a hot route: one-process systems side by side, one without OTEL_* (the
// hook does nothing), one exporting every span (always sampled, the SDK's default) and one
// sampling a tenth of the traces, over OTLP/HTTP JSON to a sink in this process, loaded in turns
// on the same warm read, GET /v1/feeds/user/author?limit=20 (20 activities, a server token).
// Figures per system: requests per second, p50 and p99 latency, the system process's CPU per
// request, and each one's ratios to the system without tracing.
// Not part of `npm run bench`; run by hand:
//   node test/bench/traces.mjs [--skip-build] [--rounds=4] [--seconds=8] [--connections=16]
import { createServer } from "node:http";
import autocannon from "autocannon";
import { log, setup } from "../../scripts/lib/setup.mjs";

const arg = (name, d) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
const rounds = arg("rounds", 4);
const seconds = arg("seconds", 8);
const connections = arg("connections", 16);

const infra = await setup({ skipBuild: process.argv.includes("--skip-build") });
const { api, cpuSecondsOf } = await import("./lib.mjs");
const { withSystem, range } = await import("./system.mjs");

// The OTLP sink: counts the spans it is sent (a collector elsewhere would take that work).
let spans = 0;
const sink = createServer((req, res) => {
  let n = 0;
  req.on("data", (c) => (n += c.length));
  req.on("end", () => {
    spans += n > 0 ? 1 : 0;
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
await new Promise((r) => sink.listen(0, "127.0.0.1", r));
const sinkUrl = `http://127.0.0.1:${sink.address().port}`;

// Neither system sheds: the comparison is of work done, not of the guard's answers.
const noShed = { OVERLOAD_MAX_LATENCY_MS: "0", OVERLOAD_MAX_IN_FLIGHT: "0", OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0" };
const traced = { ...noShed, OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };

async function seed(c) {
  const { token } = c.tenant;
  for (const j of range(20)) {
    await api(c.url, "POST", "/v1/feeds/user/author/activities", { token, body: { actor: "user:author", verb: "post", object: `note:${j}` } });
  }
  return { url: `${c.url}/v1/feeds/user/author?limit=20`, token, pid: c.gatewayPid };
}

function round(target) {
  const cpu0 = cpuSecondsOf(target.pid);
  return new Promise((resolve, reject) => {
    autocannon({ url: target.url, connections, duration: seconds, headers: { authorization: `Bearer ${target.token}` } }, (err, r) => {
      if (err) return reject(err);
      resolve({ requests: r.requests.total, non2xx: r.non2xx, errors: r.errors, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpuS: cpuSecondsOf(target.pid) - cpu0 });
    });
  });
}

const sum = (rs) => ({
  requests: rs.reduce((a, r) => a + r.requests, 0),
  non2xx: rs.reduce((a, r) => a + r.non2xx + r.errors, 0),
  rps: rs.reduce((a, r) => a + r.rps, 0) / rs.length,
  p50: rs.reduce((a, r) => a + r.p50, 0) / rs.length,
  p99: rs.reduce((a, r) => a + r.p99, 0) / rs.length,
  cpuMsPerRequest: (1000 * rs.reduce((a, r) => a + r.cpuS, 0)) / rs.reduce((a, r) => a + r.requests, 0),
});

// Every system's variant: tracing off, on with every trace sampled, on with a tenth sampled.
const variants = {
  off: noShed,
  on: traced,
  "on-10%": { ...traced, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" },
};
const names = Object.keys(variants);

/** Starts a system per variant (nested: all run at once, idle but for their turn), then `fn`. */
function withSystems(i, got, fn) {
  if (i === names.length) return fn(got);
  return withSystem(infra, log, `traces ${names[i]}`, (c) => withSystems(i + 1, { ...got, [names[i]]: c }, fn), { env: variants[names[i]] });
}

try {
  await withSystems(0, {}, async (systems) => {
    const targets = {};
    for (const n of names) targets[n] = await seed(systems[n]);
    // Warm each (JIT, caches), then take turns, the order rotating each round.
    for (const n of names) await round(targets[n]);
    const results = Object.fromEntries(names.map((n) => [n, []]));
    for (const i of range(rounds)) {
      for (const j of range(names.length)) {
        const name = names[(i + j) % names.length];
        const r = await round(targets[name]);
        results[name].push(r);
        log(`round ${i + 1} ${name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.cpuS.toFixed(2)} CPU s, ${r.non2xx + r.errors} not 2xx`);
      }
    }
    const sums = Object.fromEntries(names.map((n) => [n, sum(results[n])]));
    const ratio = (x, y) => Number((y / x).toFixed(3));
    const base = sums.off;
    const out = {
      route: "GET /v1/feeds/:group/:id?limit=20",
      rounds,
      seconds,
      connections,
      ...sums,
      spanBatchesExported: spans,
      ratiosToOff: Object.fromEntries(
        names.filter((n) => n !== "off").map((n) => [n, { rps: ratio(base.rps, sums[n].rps), p50: ratio(base.p50, sums[n].p50), p99: ratio(base.p99, sums[n].p99), cpuPerRequest: ratio(base.cpuMsPerRequest, sums[n].cpuMsPerRequest) }]),
      ),
    };
    console.log(JSON.stringify(out, null, 2));
  });
} finally {
  sink.close();
}
