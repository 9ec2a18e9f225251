// HTTP load generator, run as its own process so that it does not share an event loop with the
// servers under test: autocannon, keep-alive connections, pipelining 1.
//
// argv[2]: JSON {targets: [{name, url, headers?}], connections, warmupS, roundS, rounds}.
// Each target is warmed up, then the targets take turns for `rounds` rounds of `roundS` seconds
// (A B A B ...), so that a machine shared with other work skews them alike. Prints
// {"phase":"measure"} when the measured rounds begin and one JSON line of figures at the end.
import autocannon from "autocannon";
import { summarizeTargets } from "./lib.mjs";

const opts = JSON.parse(process.argv[2] ?? "{}");

function once(target, seconds, sink) {
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url: target.url,
        method: "GET",
        headers: target.headers ?? {},
        connections: opts.connections,
        pipelining: 1,
        duration: seconds,
        timeout: 10,
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    // autocannon's own histogram has 1 ms resolution: keep every response time (float ms).
    inst.on("response", (_client, statusCode, _bytes, responseTime) => {
      if (!sink) return;
      sink.statuses[statusCode] = (sink.statuses[statusCode] ?? 0) + 1;
      if (statusCode >= 200 && statusCode < 300) sink.latencies.push(responseTime);
    });
  });
}

for (const t of opts.targets) await once(t, opts.warmupS, null);
process.stdout.write(`${JSON.stringify({ phase: "measure" })}\n`);

const acc = Object.fromEntries(
  opts.targets.map((t) => [t.name, { latencies: [], statuses: {}, seconds: 0, non2xx: 0, errors: 0, timeouts: 0, roundRps: [], cpuS: 0 }]),
);
for (let r = 0; r < opts.rounds; r++) {
  for (const t of opts.targets) {
    const a = acc[t.name];
    const before = a.latencies.length;
    const cpu0 = process.cpuUsage();
    const res = await once(t, opts.roundS, a);
    const cpu = process.cpuUsage(cpu0);
    a.cpuS += (cpu.user + cpu.system) / 1e6;
    a.seconds += res.duration;
    a.non2xx += res.non2xx;
    a.errors += res.errors;
    a.timeouts += res.timeouts;
    a.roundRps.push((a.latencies.length - before) / res.duration);
  }
}

process.stdout.write(`${JSON.stringify({ connections: opts.connections, roundS: opts.roundS, rounds: opts.rounds, targets: summarizeTargets(opts.targets, acc) })}\n`);
