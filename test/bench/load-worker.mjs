// HTTP load generator of every bench that loads a server, run as its own process so that it does
// not share an event loop with the servers under test: autocannon, keep-alive connections,
// pipelining 1. It announces each round, so that a bench can act between rounds (flush caches
// during a "cold" round, read CPU per target).
//
// argv[2]: JSON {targets: [{name, url, method?, headers?, body?, requests?, make?, amountFrom?,
//   roundS?, prime?}], connections, warmupS, roundS, rounds, pauseMs?, sequential?, quiet?}
// make: {module, args}: every request of the target (warm-up and rounds, all connections) is
//   `request(n, args)` of that module ({method?, path, headers?, body?}), n counting from 0 and
//   never repeating: requests that must each be new (a reaction per user and activity).
// amountFrom: the name of another target; each measured round of this one sends as many
//   requests as that target's previous round answered 2xx (a floor doing the same number of
//   writes), however long they take; without such a round yet, a round of `roundS`.
// Default: each target warmed up, then the targets take turns for `rounds` rounds (A B C A B C …),
// so that a machine shared with other work skews them alike; {"phase":"measure"} marks the start.
// sequential: each target in turn gets its warm-up and then all its rounds (write loads, whose
// after-effects — fan-out backlogs — must not spill into another target's rounds).
// quiet: {pids, cores, maxMs}: before each measured round, wait until `pids` (the system under
//   test) and the shared servers together use less than `cores` over a 250 ms window (at most
//   `maxMs`): the background work a system round left (queues, relays) must not run in the next
//   round, least of all in its floor's. The wait is reported per target (quietS, quietTimeouts).
// Before each measured round it prints {"phase":"round",target,round}, waits `pauseMs`, fetches
// `prime` once if given (a request outside the measurement), then loads; after it prints
// {"phase":"roundEnd",target,round,ok,sent}. After every round and warm-up it waits as long as the
// slowest response of it took (at most 5 s): autocannon abandons the requests in flight when its
// time is up, and the server's work on them must not run into the next target's round; then
// {"phase":"settled",target,round}.
// One JSON line of figures at the end.
import autocannon from "autocannon";
import { cpuSecondsOf, infraSecondsBy, sleep, summarizeTargets } from "./lib.mjs";

const opts = JSON.parse(process.argv[2] ?? "{}");
const emit = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);

/** Target name → the request maker of its `make` (a counter shared by all its connections). */
const makers = {};
for (const t of opts.targets) {
  if (!t.make) continue;
  const { request } = await import(t.make.module);
  let n = 0;
  makers[t.name] = () => {
    const r = request(n++, t.make.args);
    return { ...r, body: r.body === undefined || typeof r.body === "string" ? r.body : JSON.stringify(r.body) };
  };
}

function once(target, seconds, sink, amount) {
  return new Promise((resolve, reject) => {
    const o = {
      url: target.url,
      method: target.method ?? "GET",
      headers: target.headers ?? {},
      connections: opts.connections,
      pipelining: 1,
      timeout: 10,
    };
    if (amount) o.amount = Math.max(amount, opts.connections);
    else o.duration = seconds;
    if (target.body !== undefined) o.body = typeof target.body === "string" ? target.body : JSON.stringify(target.body);
    if (target.requests) o.requests = target.requests;
    const make = makers[target.name];
    if (make) o.requests = [{ setupRequest: (req) => ({ ...req, ...make() }) }];
    let slowest = 0;
    const t0 = performance.now();
    let last = t0;
    // With `amount`, autocannon notices the end on its 1 s ticker and reports that as its
    // duration: the round's time is then until its last response.
    const done = (res) => Object.assign(res, { slowest, ...(amount ? { duration: (last - t0) / 1000 } : {}) });
    const inst = autocannon(o, (err, res) => (err ? reject(err) : resolve(done(res))));
    // autocannon's own histogram has 1 ms resolution: keep every response time (float ms).
    inst.on("response", (_client, statusCode, _bytes, responseTime) => {
      last = performance.now();
      slowest = Math.max(slowest, responseTime);
      if (!sink) return;
      sink.statuses[statusCode] = (sink.statuses[statusCode] ?? 0) + 1;
      if (statusCode >= 200 && statusCode < 300) sink.latencies.push(responseTime);
    });
  });
}

const acc = Object.fromEntries(
  opts.targets.map((t) => [t.name, { latencies: [], statuses: {}, seconds: 0, non2xx: 0, errors: 0, timeouts: 0, roundRps: [], cpuS: 0, sent: 0, lastOk: 0, ...(opts.quiet ? { quietS: 0, quietTimeouts: 0 } : {}) }]),
);
const settle = (res) => sleep(Math.min(5000, res.slowest));
async function warmup(t) {
  emit({ phase: "warmup", target: t.name });
  if (opts.warmupS > 0) await settle(await once(t, opts.warmupS, null));
}

/** Waits until the system and the shared servers are quiet (opts.quiet); answers seconds waited and whether it got there. */
async function quiet() {
  const q = opts.quiet;
  const t0 = performance.now();
  const busy = () => q.pids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0) + infraSecondsBy().total;
  for (;;) {
    const b0 = busy();
    const w0 = performance.now();
    await sleep(250);
    const cores = (busy() - b0) / ((performance.now() - w0) / 1000);
    if (cores < q.cores) return { s: (performance.now() - t0) / 1000, ok: true };
    if (performance.now() - t0 > q.maxMs) return { s: (performance.now() - t0) / 1000, ok: false };
  }
}

async function round(t, r) {
  const a = acc[t.name];
  if (opts.quiet) {
    const q = await quiet();
    a.quietS += q.s;
    if (!q.ok) a.quietTimeouts++;
  }
  emit({ phase: "round", target: t.name, round: r });
  if (opts.pauseMs) await sleep(opts.pauseMs);
  if (t.prime) await fetch(t.prime.url, { headers: t.prime.headers ?? {} }).then((res) => res.arrayBuffer()).catch(() => undefined);
  const before = a.latencies.length;
  const cpu0 = process.cpuUsage();
  const res = await once(t, t.roundS ?? opts.roundS, a, t.amountFrom ? acc[t.amountFrom].lastOk : undefined);
  const cpu = process.cpuUsage(cpu0);
  a.cpuS += (cpu.user + cpu.system) / 1e6;
  a.seconds += res.duration;
  a.non2xx += res.non2xx;
  a.errors += res.errors;
  a.timeouts += res.timeouts;
  a.sent += res.requests.sent;
  a.lastOk = a.latencies.length - before;
  a.roundRps.push(a.lastOk / res.duration);
  emit({ phase: "roundEnd", target: t.name, round: r, ok: a.latencies.length - before, sent: res.requests.sent, seconds: res.duration });
  await settle(res);
  emit({ phase: "settled", target: t.name, round: r });
}

if (opts.sequential) {
  emit({ phase: "measure" });
  for (const t of opts.targets) {
    await warmup(t);
    for (let r = 0; r < opts.rounds; r++) await round(t, r);
  }
} else {
  for (const t of opts.targets) await warmup(t);
  emit({ phase: "measure" });
  for (let r = 0; r < opts.rounds; r++) for (const t of opts.targets) await round(t, r);
}

emit({ connections: opts.connections, roundS: opts.roundS, rounds: opts.rounds, targets: summarizeTargets(opts.targets, acc) });
