// `npm run bench`: the same set-up as `npm start`, then every benchmark in one run, one summary
// table (each figure, its floor, the ratio and the product's target) and .cache/bench/last.json.
// Exits 0 whether or not targets are met; a target missed is marked MISS, a bench that could not
// run is marked ERROR (or SKIP when its script is absent).
//
// Flags: --only=1,2,...  run only those benches (1 full path, 2 rpc, 3 memory, 4 ferretdb, 5 jwt,
//                        6 feed reads, 7 fan-out, 8 add-activity throughput, 9 reactions with
//                        their counts, 10 notification page, 11 webhook deliveries, 12 warm
//                        first page as a user with reactions and promoted records, 13 mixed
//                        open-loop load and overload with RSS)
//                        14 follows with their counts, 15 the live stream: delivery latency
//                        under write load, 1,000 idle streams' RSS
//        --skip-build    do not run tsc -b
//        --cpu-prof      write a V8 CPU profile of the gateway under load to .cache/bench/prof/
//                        (bench 1, benches 6 and 8 over their measured rounds, 9, 12 and 14 over their load)
//        --rounds=N      measured rounds per case of benches 1, 2, 6, 9, 10 and 12 (default 4;
//                        bench 1 rounds are 2.5 s, the others' 3 s)
//        --events=N      webhook events bench 11 delivers (default 3000)
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { log, root, setup } from "./lib/setup.mjs";

const arg = (name) => process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`))?.split("=")[1] ?? (process.argv.includes(`--${name}`) ? "" : undefined);
const only = arg("only")?.split(",").map(Number);
const want = (n) => !only || only.includes(n);
const rounds = Number(arg("rounds") ?? 4);
const webhookEvents = Number(arg("events") ?? 3000);
/** --cpu-prof: where the gateway's CPU profiles go (benches 1, 6 and 8). */
const cpuProfDir = arg("cpu-prof") !== undefined ? join(root, ".cache", "bench", "prof") : undefined;
if (cpuProfDir) mkdirSync(cpuProfDir, { recursive: true });

const infra = await setup({ skipBuild: arg("skip-build") !== undefined });
// Imported after setup(): they load the built workspace packages.
const lib = await import("../test/bench/lib.mjs");
const { runHttp, runSplitMemory, stopActiveSystems } = await import("../test/bench/http.mjs");
const { runRpc } = await import("../test/bench/rpc.mjs");
const { runJwt } = await import("../test/bench/jwt.mjs");

let interrupted = false;
const onSignal = async () => {
  if (interrupted) return;
  interrupted = true;
  log("interrupted: stopping what the bench started…");
  await Promise.allSettled([stopActiveSystems(), lib.stopAllStarted()]);
  process.exit(130);
};
process.once("SIGINT", () => void onSignal());
process.once("SIGTERM", () => void onSignal());

const load0 = loadavg()[0];
/** CPU busy (all cores) in the second before each bench: other work on the machine skews figures. */
const busyBefore = {};
async function before(bench) {
  const { busy: b, top } = await lib.machineActivity(1000);
  busyBefore[bench] = b;
  if (b > 0.15) {
    const who = top.map((t) => `${t.comm}[${t.pid}] ${(t.cores * 100).toFixed(0)}%`).join(", ");
    log(`note: machine ${(b * 100).toFixed(0)}% busy before bench ${bench} (${who}); figures will be noisy`);
  }
}

/** @type {{bench:string, figure:string, value:number|null, unit:string, floor?:number|null, ratio?:number|null, target?:string, status?:string}[]} */
const rows = [];
const raw = {};
/** The gateway's scrape after bench `n`'s rounds (feed route latency, queues, fan-out lag), kept beside last.json. */
function saveMetrics(n, text) {
  if (!text) return;
  const dir = join(root, ".cache", "bench");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `metrics-after-bench-${n}.txt`);
  writeFileSync(file, `${text}\n`);
  log(`bench ${n}: the gateway's /metrics after its rounds (feed route latency, queues, fan-out lag): ${file}`);
}
const row = (r) => rows.push(r);
/**
 * Benches 9 and 14's info rows: the ceiling (the floor's route plus the notification's plain
 * writes) against the floor, and the system (`system`, the act's route) against the ceiling.
 */
const ceilingRows = (bench, other, { act, of, detail, system, r }) => {
  row({
    bench,
    other,
    figure:
      `info: the floor's route plus the plain writes of the notification ${of} makes (insertOne, $inc upserts of the owner's counts and of its group), ` +
      `inline, no outbox: the least this store does per notified ${act} (${detail})`,
    value: r.ceiling.rps,
    unit: "req/s",
    floor: r.floor.rps,
    ratio: r.ceiling.rps / r.floor.rps,
  });
  row({ bench, other, figure: `info: POST ${act} against that ceiling`, value: system.rps, unit: "req/s", floor: r.ceiling.rps, ratio: system.rps / r.ceiling.rps });
};
const status = (ok) => (ok ? "PASS" : "MISS");
const errorRow = (bench, e, st = "ERROR") => {
  log(`${bench}: ${st} ${e?.stack ?? e}`);
  row({ bench, figure: String(e?.message ?? e).split("\n")[0].slice(0, 70), value: null, unit: "", status: st });
};

// 5. jose first: it is short and wants a quiet machine.
if (want(5)) {
  await before("5");
  try {
    log("bench 5: jose jwtVerify HS256");
    const r = await runJwt();
    raw.jwt = r;
    // Floor: the signature check alone with node:crypto (what any HS256 verification must do).
    const jose = (figure, us) =>
      row({ bench: "5 jose HS256", figure, value: us, unit: "µs/token", floor: r.hmacOnlyUs, ratio: us / r.hmacOnlyUs, ratioUnit: "×" });
    jose("jwtVerify one at a time, Uint8Array secret (as gateway)", r.asGatewayUs);
    jose("jwtVerify one at a time, pre-imported KeyObject", r.preImportedKeyUs);
    jose("jwtVerify, 64 concurrent (throughput per token)", r.concurrent64Us);
    jose("decodeProtectedHeader only (verified-cache hit path)", r.decodeHeaderUs);
    row({ bench: "5 jose HS256", figure: "node:crypto createHmac + timingSafeEqual, sync (floor)", value: r.hmacOnlyUs, unit: "µs/token" });
  } catch (e) {
    errorRow("5 jose HS256", e);
  }
}

// 2. RPC plumbing.
if (want(2)) {
  await before("2");
  try {
    log("bench 2: RPC plumbing vs bare echo (64 in flight)");
    const r = await runRpc({ log, rounds });
    raw.rpc = r;
    const fig = (name, floorName, target) => {
      const c = r.results[name];
      const f = floorName ? r.results[floorName] : null;
      if (c?.error) return row({ bench: "2 rpc", figure: c.label, value: null, unit: "", status: "ERROR", note: c.error });
      const ratio = f?.rps ? c.rps / f.rps : null;
      const m = name.startsWith("inproc") ? r.machine?.inProcess : r.machine?.network;
      row({
        bench: "2 rpc",
        other: m?.otherCores,
        figure:
          `${c.label} (p50 ${c.p50.toFixed(1)} / p99 ${c.p99.toFixed(1)} ms; CPU/call ` +
          (c.serverCpuMsPerCall !== undefined
            ? `client ${(c.clientCpuMsPerCall * 1000).toFixed(0)} + server ${(c.serverCpuMsPerCall * 1000).toFixed(0)} µs)`
            : `${(c.clientCpuMsPerCall * 1000).toFixed(0)} µs)`),
        value: c.rps,
        unit: "calls/s",
        floor: f?.rps ?? null,
        ratio,
        target: target ? `≥ ${target * 100}%` : undefined,
        status: target && ratio !== null ? status(ratio >= target) : undefined,
      });
    };
    fig("connect-bare", null);
    fig("connect-plumbed", "connect-bare", 0.8);
    fig("inproc-bare", null);
    fig("inproc-plumbed", "inproc-bare", 0.8);
    fig("grpcjs", null);
    if (Number.isFinite(r.connectVsGrpcJs)) {
      row({ bench: "2 rpc", figure: "connect-node bare vs @grpc/grpc-js bare (info)", value: r.results["connect-bare"].rps, unit: "calls/s", floor: r.results.grpcjs.rps, ratio: r.connectVsGrpcJs });
    }
  } catch (e) {
    errorRow("2 rpc", e);
  }
}

// 1 and 3 (one process): one start of the system serves both.
if (want(1) || want(3)) {
  await before("1");
  try {
    const r = await runHttp({ infra, log, rounds, cpuProfDir });
    raw.http = r;
    if (want(3)) {
      row({ bench: "3 memory", figure: `idle RSS, one process (${r.idleRss.processes} proc, ${r.idleRss.idleS} s idle)`, value: r.idleRss.mb, unit: "MB", target: "< 300 MB", status: status(r.idleRss.mb < 300) });
    }
    if (want(1)) {
      const f = r.full;
      const b = r.bare;
      const notes = (x) =>
        (x.cpu ? `; server ${(x.cpu.serverCores * 100).toFixed(0)}% core, ${x.cpu.serverCpuMsPerRequest.toFixed(2)} ms CPU/req` : "") +
        (x.non2xx || x.errors ? `; ${x.non2xx} non-2xx, ${x.errors} errors` : "");
      const other = r.machine?.otherCores;
      row({ bench: "1 http", other, figure: `bare Fastify + findOne (p50 ${b.p50.toFixed(2)} / p99 ${b.p99.toFixed(2)} ms${notes(b)})`, value: b.rps, unit: "req/s" });
      row({
        bench: "1 http",
        other,
        figure: `full path GET /v1/users/:id (p50 ${f.p50.toFixed(2)} / p99 ${f.p99.toFixed(2)} ms${notes(f)})`,
        value: f.rps,
        unit: "req/s",
        floor: b.rps,
        ratio: r.ratio,
        target: "≥ 35%",
        status: status(r.ratio >= 0.35 && !f.non2xx),
      });
    }
  } catch (e) {
    errorRow(want(1) ? "1 http" : "3 memory", e);
  }
}

if (want(3)) {
  await before("3 split");
  try {
    const r = await runSplitMemory({ infra, log });
    raw.split = r;
    const one = raw.http?.idleRss?.mb;
    row({
      bench: "3 memory",
      figure: `idle RSS, split (${r.processes} processes, info; floor: one process)`,
      value: r.mb,
      unit: "MB",
      floor: one ?? null,
      ratio: one ? r.mb / one : null,
      ratioUnit: "×",
    });
  } catch (e) {
    errorRow("3 memory split", e);
  }
}

// 4. FerretDB companion GIN indexes (test/bench/ferretdb-indexes.mjs, written separately).
if (want(4)) {
  const file = join(root, "test", "bench", "ferretdb-indexes.mjs");
  if (!existsSync(file)) {
    errorRow("4 ferretdb", new Error("test/bench/ferretdb-indexes.mjs does not exist yet"), "SKIP");
  } else {
    await before("4");
    try {
      log("bench 4: FerretDB companion indexes");
      const mod = await import(pathToFileURL(file).href);
      const r = await mod.run({ log });
      raw.ferretdb = r;
      ferretRows(r);
    } catch (e) {
      errorRow("4 ferretdb", e);
    }
  }
}

/**
 * {withGin, withoutGin, speedup} of test/bench/ferretdb-indexes.mjs: per lookup, {p50, mean, ...}
 * milliseconds with and without the companion GIN indexes and their speed-ups. One row per lookup
 * (p50 against ≥ 5×, mean shown beside it); any other shape is flattened, one row per number.
 */
function ferretRows(r) {
  const lookups = Object.entries(r?.speedup ?? {}).filter(([, v]) => v && typeof v === "object" && typeof v.p50 === "number");
  if (lookups.length) {
    for (const [k, sp] of lookups) {
      const g = r.withGin?.[k] ?? {};
      const w = r.withoutGin?.[k] ?? {};
      const plan = (p) => (typeof p !== "string" ? "?" : p.includes("fgin") ? "GIN" : p === "seq scan" ? "seq scan" : "btree");
      const plans = r.withGin?.plans?.[k] ? `; plan ${plan(r.withGin.plans[k])} vs ${plan(r.withoutGin?.plans?.[k])}` : "";
      const ok = sp.p50 >= 5 && (typeof sp.mean !== "number" || sp.mean >= 5);
      row({
        bench: "4 ferretdb",
        figure: `${k} p50, with GIN vs without (mean ${fmt(g.mean)} vs ${fmt(w.mean)} ms = ${fmt(sp.mean)}×${plans})`,
        value: g.p50 ?? null,
        unit: "ms",
        floor: w.p50 ?? null,
        ratio: sp.p50,
        ratioUnit: "×",
        target: "≥ 5×",
        status: status(ok),
      });
    }
    return;
  }
  const flat = (v, prefix = "", out = {}) => {
    if (typeof v === "number") out[prefix || "value"] = v;
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) flat(x, prefix ? `${prefix}.${k}` : k, out);
    return out;
  };
  const speed = flat(r?.speedup);
  if (!Object.keys(speed).length) {
    row({ bench: "4 ferretdb", figure: `unexpected result ${JSON.stringify(r).slice(0, 60)}`, value: null, unit: "", status: "ERROR" });
    return;
  }
  for (const [k, s] of Object.entries(speed)) {
    row({ bench: "4 ferretdb", figure: `speed-up ${k}`, value: s, unit: "×", target: "≥ 5×", status: status(s >= 5) });
  }
}

// 6, 7, 8: feed reads, fan-out, add-activity throughput (test/bench/feeds.mjs), each on its own
// one-process system and namespace.
if (want(6) || want(7) || want(8)) {
  const file = join(root, "test", "bench", "feeds.mjs");
  const feeds = existsSync(file) ? await import(pathToFileURL(file).href) : null;
  const la = () => `load avg ${loadavg()[0].toFixed(2)}`;
  const ms = (x) => `p50 ${fmt(x.p50)} / p99 ${fmt(x.p99)} ms`;
  const cpuOf = (x) =>
    x.cpu ? `; server ${(x.cpu.serverCores * 100).toFixed(0)}% core, ${x.cpu.serverCpuMsPerRequest.toFixed(2)} ms CPU/req, db+redis ${x.cpu.infraCpuMsPerRequest.toFixed(2)} ms CPU/req` : "";
  const errs = (x) => (x.non2xx || x.errors ? `; ${x.non2xx} non-2xx, ${x.errors} errors` : "");
  if (want(6)) {
    if (!feeds) errorRow("6 feed read", new Error("test/bench/feeds.mjs does not exist yet"), "SKIP");
    else {
      await before("6");
      try {
        log("bench 6: feed reads (warm, cold, page 2) vs bare Fastify + the same MongoDB queries");
        const r = await feeds.runFeedReads({ infra, log, rounds, cpuProfDir });
        raw.feedReads = r;
        saveMetrics("6", r.metrics);
        const other = r.machine?.otherCores;
        const b = "6 feed read";
        row({ bench: b, other, figure: `bare Fastify, 4 queries, page 1 (${ms(r.floor)}${cpuOf(r.floor)}${errs(r.floor)}; ${la()})`, value: r.floor.rps, unit: "req/s" });
        row({
          bench: b,
          other,
          figure: `warm page 1, head + cache (${ms(r.warm)}${cpuOf(r.warm)}${errs(r.warm)})`,
          value: r.warm.rps,
          unit: "req/s",
          floor: r.floor.rps,
          ratio: r.ratios.warm,
          target: "≥ 100%",
          status: status(r.ratios.warm >= 1 && !r.warm.non2xx),
        });
        row({
          bench: b,
          other,
          figure:
            `cold page 1, head, activity and user/object cache keys deleted every ${r.load.flushEveryMs} ms (≥ ${(r.flush.headMissLowerBound * 100).toFixed(0)}% head misses; ` +
            `${ms(r.cold)}${cpuOf(r.cold)}${errs(r.cold)})`,
          value: r.cold.rps,
          unit: "req/s",
          floor: r.floor.rps,
          ratio: r.ratios.cold,
          target: "≥ 30%",
          status: status(r.ratios.cold >= 0.3 && !r.cold.non2xx),
        });
        row({ bench: b, other, figure: `bare Fastify, 4 queries, page 2 (${ms(r.floor2)}${cpuOf(r.floor2)}${errs(r.floor2)})`, value: r.floor2.rps, unit: "req/s" });
        row({
          bench: b,
          other,
          figure: `page 2 via next: entries from MongoDB, activity cache as is (${ms(r.page2)}${cpuOf(r.page2)}${errs(r.page2)})`,
          value: r.page2.rps,
          unit: "req/s",
          floor: r.floor2.rps,
          ratio: r.ratios.page2,
          target: "≥ 30%",
          status: status(r.ratios.page2 >= 0.3 && !r.page2.non2xx),
        });
      } catch (e) {
        errorRow("6 feed read", e);
      }
    }
  }
  if (want(7)) {
    if (!feeds) errorRow("7 fan-out", new Error("test/bench/feeds.mjs does not exist yet"), "SKIP");
    else {
      await before("7");
      try {
        log("bench 7: fan-out of one activity to 10,000 followers vs bare insertMany");
        const r = await feeds.runFanout({ infra, log });
        raw.fanout = r;
        const other = r.machine?.otherCores;
        const b = "7 fan-out";
        row({
          bench: b,
          other,
          figure: `bare insertMany ${r.followers} entries, 500/batch unordered (${fmt(r.floor.before.seconds)} s, ${fmt(r.floor.after.seconds)} s; mean of before/after)`,
          value: r.floor.entriesPerS,
          unit: "entries/s",
        });
        row({
          bench: b,
          other,
          figure: `1 activity → ${r.followers} followers: seconds until the last follower feed has it (POST answered in ${fmt(r.postMs)} ms)`,
          value: r.seconds,
          unit: "s",
        });
        row({
          bench: b,
          other,
          figure:
            `1 activity → ${r.followers} followers, entries/s (gateway ${(r.gatewayCores * 100).toFixed(0)}%, db+redis+nats ` +
            `${(r.infraCores * 100).toFixed(0)}% core; load avg ${r.loadAverage.toFixed(2)})`,
          value: r.entriesPerS,
          unit: "entries/s",
          floor: r.floor.entriesPerS,
          ratio: r.ratio,
          target: "≥ 60%",
          status: status(r.ratio >= 0.6),
        });
        const d = r.diagnosis;
        if (d) {
          row({
            bench: b,
            figure: `diagnosis: the worker's follower pass, one cursor over all ${d.allFollowers} followers (a keyset page of 500 instead: ${fmt(d.keysetPageMs)} ms × ${d.keysetPages})`,
            value: d.followerPassMs,
            unit: "ms",
          });
        }
      } catch (e) {
        errorRow("7 fan-out", e);
      }
      // The celebrity: 100,000 followers, split system, two fan-out worker processes.
      try {
        await before("7c");
        const { runCelebrity } = await import("../test/bench/celebrity.mjs");
        const r = await runCelebrity({ infra, log, insertFloor: feeds.insertFloor });
        raw.celebrity = r;
        const b = "7 celebrity";
        row({
          bench: b,
          figure: `bare insertMany ${r.followers} entries, 500/batch unordered (${fmt(r.floor.before.seconds)} s, ${fmt(r.floor.after.seconds)} s; mean of before/after)`,
          value: r.floor.entriesPerS,
          unit: "entries/s",
        });
        row({
          bench: b,
          figure: `1 activity → ${r.followers} followers, 2 fan-out workers: seconds until the last follower feed has it`,
          value: r.seconds,
          unit: "s",
        });
        row({
          bench: b,
          figure: `1 activity → ${r.followers} followers, entries/s (load avg ${r.loadAverage.toFixed(2)}; ${r.deadLettered} dead-lettered)`,
          value: r.entriesPerS,
          unit: "entries/s",
          floor: r.floor.entriesPerS,
          ratio: r.ratio,
          target: "≥ 60%",
          status: status(r.ratio >= 0.6),
        });
        for (const t of r.tasks) {
          row({ bench: b, figure: `fan-out tasks done by ${t.worker} (both workers share the chunks: target > 0 each)`, value: t.tasks, unit: "tasks", status: status(t.tasks > 0) });
        }
        for (const [name, mb] of Object.entries(r.peakRssMB)) {
          if (["fanout-worker", "fanout-worker-2", "graph", "gateway"].includes(name)) row({ bench: b, figure: `peak RSS of ${name} during the fan-out`, value: mb, unit: "MB" });
        }
      } catch (e) {
        errorRow("7 celebrity", e);
      }
    }
  }
  if (want(8)) {
    if (!feeds) errorRow("8 add activity", new Error("test/bench/feeds.mjs does not exist yet"), "SKIP");
    else {
      await before("8");
      try {
        log("bench 8: add-activity throughput, 100 followers per author, then the fan-out drain");
        const r = await feeds.runWrites({ infra, log, cpuProfDir });
        raw.writes = r;
        saveMetrics("8", r.metrics);
        const other = r.machine?.otherCores;
        const b = "8 add activity";
        row({ bench: b, other, figure: `bare Fastify, one insertOne of the activity (floor; ${ms(r.one)}${cpuOf(r.one)}${errs(r.one)}; ${la()})`, value: r.one.rps, unit: "req/s" });
        row({ bench: b, other, figure: `bare Fastify, insert activity + entry (context; ${ms(r.bare)}${cpuOf(r.bare)}${errs(r.bare)}; ${r.ratioTwoInserts.toFixed(2)} of it)`, value: r.bare.rps, unit: "req/s" });
        row({
          bench: b,
          other,
          figure: `POST activity, ${r.authors} authors × ${r.fewFollowers} followers (${ms(r.few)}${cpuOf(r.few)}${errs(r.few)})`,
          value: r.few.rps,
          unit: "req/s",
          floor: r.one.rps,
          ratio: r.ratio,
          target: "≥ 50%",
          status: status(r.ratio >= 0.5 && !r.few.non2xx && !r.few.errors),
        });
        row({
          bench: b,
          other,
          figure: `POST activity, ${r.authors} authors × ${r.followersEach} followers (${ms(r.full)}${cpuOf(r.full)}${errs(r.full)}; info)`,
          value: r.full.rps,
          unit: "req/s",
          floor: r.one.rps,
          ratio: r.ratioFull,
        });
        row({
          bench: b,
          figure: `MongoDB commands per add, the route's (floor 1; ${Object.entries(r.commandsByName).map(([k, n]) => `${k} ${(n / r.adds).toFixed(2)}`).join(", ")}; background until the drain ${r.backgroundCommandsPerAdd.toFixed(2)})`,
          value: r.commandsPerAdd,
          unit: "commands",
          target: "≤ 2",
          status: status(r.commandsPerAdd <= 2),
        });
        row({
          bench: b,
          other,
          figure: `fan-out drain: seconds from the end of the load until every follower feed had every activity (${r.atStop.messages} tasks queued at the end)`,
          value: r.drainS,
          unit: "s",
        });
        row({
          bench: b,
          other,
          figure: `fan-out: ${r.followerEntries} follower entries for the ${r.drained.activities - r.drained.few} activities of the ${r.followersEach}-follower round, first post to last entry`,
          value: r.fanoutEntriesPerS,
          unit: "entries/s",
        });
      } catch (e) {
        errorRow("8 add activity", e);
      }
    }
  }
}

// 9 to 12 (issue 9): reactions, the notification page, webhook deliveries, the warm user page;
// each on a one-process system and namespace of its own.
{
  const la = () => `load avg ${loadavg()[0].toFixed(2)}`;
  const ms = (x) => `p50 ${fmt(x.p50)} / p99 ${fmt(x.p99)} ms`;
  const cpuOf = (x) =>
    x.cpu ? `; server ${(x.cpu.serverCores * 100).toFixed(0)}% core, ${x.cpu.serverCpuMsPerRequest.toFixed(2)} ms CPU/req, db+redis ${x.cpu.infraCpuMsPerRequest.toFixed(2)} ms CPU/req` : "";
  const errs = (x) => (x.non2xx || x.errors ? `; ${x.non2xx} non-2xx, ${x.errors} errors` : "");
  const bench = async (n, name, file, fn) => {
    if (!want(n)) return;
    const path = join(root, "test", "bench", file);
    if (!existsSync(path)) return errorRow(name, new Error(`test/bench/${file} does not exist yet`), "SKIP");
    await before(String(n));
    try {
      await fn(await import(pathToFileURL(path).href));
    } catch (e) {
      errorRow(name, e);
    }
  };

  await bench(9, "9 reactions", "reactions.mjs", async (m) => {
    log("bench 9: reactions with their count updates vs as many bare insertOnes");
    const r = await m.runReactions({ infra, log, rounds, cpuProfDir });
    raw.reactions = r;
    const other = r.machine?.otherCores;
    const b = "9 reactions";
    row({ bench: b, other, figure: `bare Fastify, insertOne of the reaction document and the $inc of its activity, as many per round as the reactions (${ms(r.floor)}${cpuOf(r.floor)}${errs(r.floor)}; ${la()})`, value: r.floor.rps, unit: "req/s" });
    row({
      bench: b,
      other,
      figure:
        `POST reaction, many users × ${r.activities} activities, each answered after reaction_counts and version moved ` +
        `(${ms(r.reactions)}${cpuOf(r.reactions)}${errs(r.reactions)}; ${r.stored.reactions} stored, counts exact)`,
      value: r.reactions.rps,
      unit: "req/s",
      floor: r.floor.rps,
      ratio: r.ratio,
      target: "≥ 50%",
      status: status(r.ratio >= 0.5 && !r.reactions.non2xx && !r.reactions.errors),
    });
    ceilingRows(b, other, { act: "reaction", of: "each reaction", detail: `${ms(r.ceiling)}${cpuOf(r.ceiling)}${errs(r.ceiling)}`, system: r.reactions, r });
    row({
      bench: b,
      figure: `MongoDB commands per reaction on its request path (${Object.entries(r.commandsByName).map(([k, n]) => `${k} ${(n / r.stored.reactions).toFixed(2)}`).join(", ")}; the background's not counted)`,
      value: r.commandsPerReaction,
      unit: "commands",
      target: "≤ 3",
      status: status(r.commandsPerReaction <= 3),
    });
  });

  await bench(10, "10 notifications", "notifications.mjs", async (m) => {
    log("bench 10: the notification page vs bare Fastify + the same MongoDB queries");
    const r = await m.runNotificationPage({ infra, log, rounds });
    raw.notifications = r;
    const other = r.machine?.otherCores;
    const b = "10 notifications";
    row({ bench: b, other, figure: `bare Fastify: page, 2 counts, actor users (${ms(r.floor)}${cpuOf(r.floor)}${errs(r.floor)}; ${la()})`, value: r.floor.rps, unit: "req/s" });
    row({
      bench: b,
      other,
      figure: `bare Fastify: page and 2 counts, no users query (info; ${ms(r.floorNoUsers)}${cpuOf(r.floorNoUsers)})`,
      value: r.floorNoUsers.rps,
      unit: "req/s",
    });
    row({
      bench: b,
      other,
      figure: `GET /v1/notifications?limit=20, user token, 200 notifications (${ms(r.gateway)}${cpuOf(r.gateway)}${errs(r.gateway)})`,
      value: r.gateway.rps,
      unit: "req/s",
      floor: r.floor.rps,
      ratio: r.ratios.floor,
      target: "≥ 100%",
      status: status(r.ratios.floor >= 1 && !r.gateway.non2xx),
    });
    row({ bench: b, other, figure: `bare Fastify: the grouped page's queries (${ms(r.groupsFloor)}${cpuOf(r.groupsFloor)}${errs(r.groupsFloor)})`, value: r.groupsFloor.rps, unit: "req/s" });
    row({
      bench: b,
      other,
      figure: `GET /v1/notifications/groups?limit=20, user token, 31 groups (${ms(r.groups)}${cpuOf(r.groups)}${errs(r.groups)})`,
      value: r.groups.rps,
      unit: "req/s",
      floor: r.groupsFloor.rps,
      ratio: r.ratios.groups,
      target: "≥ 35%",
      status: status(r.ratios.groups >= 0.35 && !r.groups.non2xx),
    });
  });

  await bench(11, "11 webhooks", "webhooks.mjs", async (m) => {
    log("bench 11: webhook deliveries to a local receiver vs fetch POST loops to it");
    const r = await m.runWebhooks({ infra, log, events: webhookEvents });
    raw.webhooks = r;
    const other = r.machine?.otherCores;
    const b = "11 webhooks";
    row({
      bench: b,
      other,
      figure: `undici (fetch) POST loop to the receiver, one at a time (${fmt(r.fetch1.before)} before, ${fmt(r.fetch1.after)} after; mean; ${la()})`,
      value: r.fetch1.mean,
      unit: "POST/s",
    });
    const delivered =
      `${r.events} events published → delivered, first publish to last distinct delivery (${fmt(r.seconds)} s, ${r.requests} requests; ` +
      `system ${(r.systemCores * 100).toFixed(0)}% core, receiver ${(r.receiverCores * 100).toFixed(0)}%)`;
    row({ bench: b, other, figure: `${delivered} vs the one loop (the issue's floor)`, value: r.deliveries, unit: "POST/s", floor: r.fetch1.mean, ratio: r.ratio1, target: "≥ 50%", status: status(r.ratio1 >= 0.5) });
    row({
      bench: b,
      other,
      figure: `undici (fetch) POST loops to the receiver, ${r.fetchParallel.loops} at a time as the worker (${fmt(r.fetchParallel.before)} before, ${fmt(r.fetchParallel.after)} after; mean)`,
      value: r.fetchParallel.mean,
      unit: "POST/s",
    });
    row({ bench: b, other, figure: `the same deliveries vs ${r.fetchParallel.loops} loops at once (info)`, value: r.deliveries, unit: "POST/s", floor: r.fetchParallel.mean, ratio: r.ratio });
  });

  await bench(12, "12 warm user page", "warm-page.mjs", async (m) => {
    log("bench 12: warm first page as a user (own reactions, promoted) vs bare Fastify hello; MongoDB commands");
    const r = await m.runWarmUserPage({ infra, log, rounds, cpuProfDir });
    raw.warmUserPage = r;
    const other = r.machine?.otherCores;
    const b = "12 warm user page";
    row({ bench: b, other, figure: `bare Fastify hello (${ms(r.hello)}${cpuOf(r.hello)}${errs(r.hello)}; ${la()})`, value: r.hello.rps, unit: "req/s" });
    row({
      bench: b,
      other,
      figure: `warm page 1 as the reader: own_reactions, reaction_counts, 2 promoted, actor users, objects (${ms(r.warm)}${cpuOf(r.warm)}${errs(r.warm)}; ratio was 0.009)`,
      value: r.warm.rps,
      unit: "req/s",
      floor: r.hello.rps,
      ratio: r.ratio,
      ratioUnit: "×",
      target: "≥ 0.15× (issue 11)",
      status: status(r.ratio >= 0.15),
    });
    const h = r.halfLoad;
    row({
      bench: b,
      other,
      figure: `warm page 1, open loop at half of that (${h.rate} req/s, ${h.ok}/${h.sent} 2xx): p50 ${h.p50.toFixed(1)}, p99.9 ${h.p999.toFixed(1)}, longest ${h.maxMs.toFixed(0)} ms; p99 →`,
      value: h.p99,
      unit: "ms",
      target: "≤ 50 ms",
      status: status(h.p99 <= 50 && h.ok === h.sent),
    });
    row({
      bench: b,
      figure: `MongoDB commands per warm read (${r.commands} over the load's warm-up and ${r.warm.sent} measured requests; command monitoring)`,
      value: r.commandsPerRead,
      unit: "commands",
      target: "0",
      status: status(r.commands === 0 && !r.warm.non2xx),
    });
  });
}

// 13 (issue 11 item 5): mixed 10% write / 90% read load, open loop at fractions of the capacity
// the same mix saturates at, overload shedding at 150%, RSS.
if (want(13)) {
  const b = "13 mixed load";
  const path = join(root, "test", "bench", "mixed.mjs");
  if (!existsSync(path)) errorRow(b, new Error("test/bench/mixed.mjs does not exist yet"), "SKIP");
  else {
    await before("13");
    try {
      log("bench 13: mixed load (10% POST activity, 90% GET timeline page 1), closed-loop capacity, open loop at 25/50/75/150%");
      const m = await import(pathToFileURL(path).href);
      const r = await m.runMixedLoad({ infra, log });
      raw.mixed = r;
      const ms = (x) => `p50 ${fmt(x.p50)} / p99 ${fmt(x.p99)} / p99.9 ${fmt(x.p999)} ms`;
      const notes = (x) => `system ${(x.systemCores * 100).toFixed(0)}% core, load avg ${x.loadAverage.toFixed(2)}`;
      const { before: cb, after: ca } = r;
      row({
        bench: b,
        other: Math.max(cb.otherCores, ca.otherCores),
        figure: `capacity: closed loop, ${cb.connections} connections, 2xx/s before the open rounds (${ms(cb)}; ${cb.shed} shed; ${notes(cb)})`,
        value: r.capacity,
        unit: "req/s",
      });
      row({
        bench: b,
        other: ca.otherCores,
        figure: `the same closed loop 3 s after the 150% round: recovery (${ms(ca)}; ${ca.shed} shed, ${ca.errors} errors; ${notes(ca)})`,
        value: ca.rps,
        unit: "req/s",
        floor: r.capacity,
        ratio: ca.rps / r.capacity,
        target: "report",
      });
      for (const x of r.open) {
        row({
          bench: b,
          other: x.otherCores,
          figure: `open loop ${x.label.slice(5)} of capacity, ${fmt(x.rate)} req/s offered (${ms(x)}; reads p99 ${fmt(x.byName.read.p99)}, writes p99 ${fmt(x.byName.write.p99)} ms; ${x.shed} shed, ${x.errors} errors; ${notes(x)})`,
          value: x.p99,
          unit: "ms p99",
          target: "report",
        });
      }
      const o = r.over;
      row({
        bench: b,
        other: o.otherCores,
        figure: `open loop ${o.label.slice(5)} (${fmt(o.rate)} req/s offered): goodput, 2xx answered/s vs capacity (${o.shed} of ${o.sent} shed with 429, ${o.errors} errors; ${ms(o)}; ${notes(o)})`,
        value: o.goodput,
        unit: "req/s",
        floor: r.capacity,
        ratio: r.overloadRatio,
        target: "≥ 90%",
        status: status(r.overloadRatio >= 0.9),
      });
      row({
        bench: b,
        other: o.otherCores,
        figure: `open loop ${o.label.slice(5)}: longest wait for any answer (2xx, 429 or error) from its scheduled time`,
        value: o.maxAnswerMs / 1000,
        unit: "s",
        target: "≤ 3 s",
        status: status(o.maxAnswerMs <= 3000 && !o.errors),
      });
      const u = r.burst;
      row({
        bench: b,
        figure: `burst on the idle system: ${u.sent} concurrent reactions by ${u.sent} users (${u.created} × 201, ${u.other} other; longest ${fmt(u.maxMs)} ms): answers shed with 429`,
        value: u.shed,
        unit: "",
        target: "0",
        status: status(u.shed === 0 && u.other === 0),
      });
      row({ bench: b, figure: `idle RSS, one process, after set-up (${r.users} users, ${r.users * r.follows} follows, ${r.seedPosts} activities)`, value: r.idleRssMb, unit: "MB", target: "< 300 MB", status: status(r.idleRssMb < 300) });
      row({ bench: b, figure: "peak RSS, one process, over the mixed-load rounds (sampled every 100 ms)", value: r.peakRssMb, unit: "MB", target: "report" });
    } catch (e) {
      errorRow(b, e);
    }
  }
}

// 14 (issue 19): follows with their counts vs a bare route doing the edge insert and two $incs.
if (want(15)) {
  const b = "15 stream";
  await before("15");
  try {
    log("bench 15: live stream delivery latency under write load; 1,000 idle streams on one gateway");
    const r = await (await import(pathToFileURL(join(root, "test", "bench", "stream.mjs")).href)).runStream({ infra, log });
    raw.stream = r;
    const ms = (x) => `p50 ${fmt(x.p50)} / p99 ${fmt(x.p99)} / max ${fmt(x.max)} ms over ${x.n} of ${r.posts} posts`;
    row({ bench: b, figure: `origin feed: 201 → activity.added (${ms(r.origin)}; ${fmt(r.loadPostsPerSecond)} load posts/s)`, value: r.origin.p99, unit: "ms p99", target: "≤ 500 ms", status: status(r.origin.n === r.posts && r.origin.p99 <= 500) });
    row({ bench: b, figure: `follower feed: 201 → activity.added after fan-out (${ms(r.follower)})`, value: r.follower.p99, unit: "ms p99", target: "≤ 2000 ms", status: status(r.follower.n === r.posts && r.follower.p99 <= 2000) });
    row({ bench: b, figure: `${r.idle.streams} idle streams on one gateway process: RSS ${fmt(r.idle.rssBeforeMB)} → ${fmt(r.idle.rssAfterMB)} MB`, value: r.idle.kbPerStream, unit: "KB/stream" });
  } catch (e) {
    errorRow(b, e);
  }
}

if (want(14)) {
  const b = "14 follows";
  const path = join(root, "test", "bench", "follows.mjs");
  if (!existsSync(path)) errorRow(b, new Error("test/bench/follows.mjs does not exist yet"), "SKIP");
  else {
    await before("14");
    try {
      log("bench 14: follows with their counts vs as many bare edge inserts + two $incs");
      const r = await (await import(pathToFileURL(path).href)).runFollows({ infra, log, rounds, cpuProfDir });
      raw.follows = r;
      const other = r.machine?.otherCores;
      const ms = (x) => `p50 ${fmt(x.p50)} / p99 ${fmt(x.p99)} ms`;
      const errs = (x) => (x.non2xx || x.errors ? `; ${x.non2xx} non-2xx, ${x.errors} errors` : "");
      row({ bench: b, other, figure: `bare Fastify, edge insertOne + two $inc upserts, as many per round as the follows (${ms(r.floor)}${errs(r.floor)})`, value: r.floor.rps, unit: "req/s" });
      row({
        bench: b,
        other,
        figure: `POST follow, many feeds × ${r.targets} targets, each answered after both counts moved (${ms(r.follows)}${errs(r.follows)}; ${r.stored.edges} edges, counts exact; ${fmt(r.commandsPerFollow)} MongoDB commands each)`,
        value: r.follows.rps,
        unit: "req/s",
        floor: r.floor.rps,
        ratio: r.ratio,
        target: "≥ 50%",
        status: status(r.ratio >= 0.5 && !r.follows.non2xx && !r.follows.errors),
      });
      ceilingRows(b, other, { act: "follow", of: "each follow of a user feed", detail: `${ms(r.ceiling)}${errs(r.ceiling)}`, system: r.follows, r });
    } catch (e) {
      errorRow(b, e);
    }
  }
}

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  const a = Math.abs(v);
  return a >= 1000 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toFixed(3);
}
const fmtRatio = (r) => `${(r * 100).toFixed(1)}%`;
// Other people's work on the machine during a measured run, in cores, above which a miss is "noisy".
const NOISY = 0.25;

// The summary.
const table = rows.map((r) => [
  r.bench,
  r.figure,
  r.value === null ? "—" : `${fmt(r.value)} ${r.unit}`.trim(),
  r.floor === null || r.floor === undefined ? "" : `${fmt(r.floor)} ${r.unit}`.trim(),
  r.ratio === null || r.ratio === undefined || !Number.isFinite(r.ratio) ? "" : r.ratioUnit === "×" ? `${fmt(r.ratio)}×` : fmtRatio(r.ratio),
  r.target ?? "",
  r.status === "MISS" && r.other > NOISY ? "MISS (noisy)" : (r.status ?? ""),
  r.other === undefined || r.other === null ? "" : `${r.other.toFixed(2)} cores`,
]);
const head = ["bench", "figure", "value", "floor", "ratio", "target", "result", "other work"];
const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => String(t[i]).length)));
const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ").trimEnd();
const out = [
  "",
  `Benchmark summary (${infra.version}, ${cpus().length} cores, load average at start ${load0.toFixed(2)})`,
  `Machine CPU busy in the second before each bench (anything): ${Object.entries(busyBefore).map(([k, v]) => `${k}: ${(v * 100).toFixed(0)}%`).join(", ")}`,
  line(head),
  line(widths.map((w) => "-".repeat(w))),
  ...table.map(line),
  ...(rows.some((r) => r.other !== undefined)
    ? [
        `"other work": cores (of ${cpus().length}) used during the measured rounds by processes that are neither this bench's nor the shared`,
        `servers (FerretDB/PostgreSQL/Redis/NATS): other people's builds and tests. A miss above ${NOISY} cores is marked noisy.`,
      ]
    : []),
  "",
];
process.stdout.write(out.join("\n"));

const dir = join(root, ".cache", "bench");
mkdirSync(dir, { recursive: true });
const file = join(dir, "last.json");
writeFileSync(
  file,
  `${JSON.stringify({ at: new Date().toISOString(), version: infra.version, cores: cpus().length, loadAverageAtStart: load0, busyBefore, rows, raw }, null, 2)}\n`,
);
process.stdout.write(`written: ${file}\n`);
await Promise.allSettled([stopActiveSystems(), lib.stopAllStarted()]);
process.exit(0);
