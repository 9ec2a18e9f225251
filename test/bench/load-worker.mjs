// HTTP load generator, run as its own process so that it does not share an event loop with the
// server under test: autocannon with keep-alive connections, a warm-up run, then the measured run.
// argv[2]: JSON {url, headers?, connections, durationS, warmupS}. Prints one JSON line of figures.
import autocannon from "autocannon";
import { percentile } from "./lib.mjs";

const opts = JSON.parse(process.argv[2] ?? "{}");

function once(seconds, record) {
  return new Promise((resolve, reject) => {
    const latencies = [];
    const statuses = {};
    const inst = autocannon(
      {
        url: opts.url,
        method: "GET",
        headers: opts.headers ?? {},
        connections: opts.connections,
        pipelining: 1,
        duration: seconds,
        timeout: 10,
      },
      (err, res) => (err ? reject(err) : resolve({ res, latencies, statuses })),
    );
    // autocannon's own histogram has 1 ms resolution: keep every response time (float ms) too.
    inst.on("response", (_client, statusCode, _bytes, responseTime) => {
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      if (record && statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
}

if (opts.warmupS > 0) await once(opts.warmupS, false);
const { res, latencies, statuses } = await once(opts.durationS, true);
latencies.sort((a, b) => a - b);
const ok = latencies.length;
const seconds = res.duration; // measured run's real duration (s)
process.stdout.write(
  `${JSON.stringify({
    rps: ok / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    ok,
    non2xx: res.non2xx,
    errors: res.errors,
    timeouts: res.timeouts,
    statuses,
    seconds,
    connections: opts.connections,
  })}\n`,
);
