// Benches 6, 7 and 8 of `npm run bench`: feed reads, fan-out and add-activity throughput, each on
// a one-process system of its own (fresh namespace, dropped afterwards), against floors measured
// in the same run on the same database:
//   6  GET /v1/feeds/timeline/reader?limit=20 (user token) warm (Redis head + activity cache),
//      cold (those keys deleted every 2 ms while the round runs) and page 2 (a `next` cursor: the
//      entries always come from MongoDB), vs a bare Fastify route issuing the same MongoDB
//      queries (bare-feed.mjs). Loaded from load-worker.mjs (its own process), turn-taking rounds.
//   7  one activity to 10,000 followers: seconds until the last follower feed has it, entries/s,
//      vs insertMany of as many entry documents (500 a batch, unordered) into a scratch
//      collection with feed_entries' indexes; then the celebrity (celebrity.mjs): 100,000
//      followers, split system, two fan-out worker processes, with their tasks and peak RSS.
//   8  POST activities for ~10 s each: 10 authors × 10 followers (the issue's figure: its ratio to
//      the floor is the target), then 10 other authors × 100 followers; req/s, p50, p99, MongoDB
//      commands per add (the driver's command monitoring, by route), then the fan-out backlog's
//      drain time; floor: a bare route doing one insertOne (the activity); context: one doing
//      the two inserts (activity + entry).
import { randomUUID } from "node:crypto";
import { existsSync, renameSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { api, benchDir, commandsSince, cpuMeter, mongoCommands, sleep, startNode } from "./lib.mjs";
import { seedFollowers } from "./celebrity.mjs";
import { batch, copyIndexes, fmt, infraSeconds, load, machineNote, metricsExcerpt, pool, range, serversText, until, userToken, withSystem } from "./system.mjs";

// Deletes a feed head (sorted set and its partial/complete flags), the cached activities of its
// first page (the next ARGV[1] keys) and the read-cache entries of their actor users and objects
// (the rest), atomically; answers whether the head existed (a request rebuilt it since the
// previous flush) and how many activity and read-cache keys existed (refilled by requests that
// missed them).
const FLUSH = `
local h = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local n = tonumber(ARGV[1])
local a = 0
local r = 0
if n > 0 then a = redis.call('DEL', unpack(KEYS, 4, 3 + n)) end
if #KEYS > 3 + n then r = redis.call('DEL', unpack(KEYS, 4 + n)) end
return {h, a, r}
`;

function startFlusher(redis, { keys, activityKeys }, everyMs) {
  const stats = { flushes: 0, headRebuilt: 0, actRefilled: 0, readCacheRefilled: 0 };
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const [h, a, r] = await redis.eval(FLUSH, keys.length, ...keys, String(activityKeys));
      stats.flushes++;
      stats.headRebuilt += h;
      stats.actRefilled += a;
      stats.readCacheRefilled += r;
      await sleep(everyMs);
    }
  })();
  return {
    stats,
    async stop() {
      stop = true;
      await loop;
    },
  };
}

/** Bench 6: feed reads, warm / cold / page 2, vs the bare route. */
export async function runFeedReads({ infra, log, rounds = 4, roundS = 3, warmupS = 1, connections = 10, flushEveryMs = 2, cpuProfDir }) {
  return withSystem(infra, log, "bench 6", async (c) => {
    const AUTHORS = 10;
    const PER_AUTHOR = 22;
    const N = AUTHORS * PER_AUTHOR;
    const LIMIT = 20;
    const { token } = c.tenant;
    const t0 = Date.now();
    await Promise.all(
      range(AUTHORS).map((k) =>
        api(c.url, "PUT", `/v1/users/a${k}`, { token, body: { custom: { name: `Author ${k}`, avatar: `https://img.example/a${k}.png`, plan: "pro" } } }),
      ),
    );
    await api(c.url, "PUT", "/v1/users/reader", { token, body: { custom: { name: "Reader" } } });
    for (let i = 0; i < N; i += 100) {
      await batch(c, "/v1/batch/objects", "objects", range(i, Math.min(N, i + 100)).map((j) => ({ type: "note", id: String(j), custom: { title: `Note ${j}`, words: 100 + j } })));
    }
    await batch(c, "/v1/batch/follows", "follows", range(AUTHORS).map((k) => ({ source: "timeline:reader", target: `user:a${k}` })));
    let warned = 0;
    await pool(N, 8, async (j) => {
      const k = j % AUTHORS;
      const res = await api(c.url, "POST", `/v1/feeds/user/a${k}/activities`, {
        token,
        body: { actor: `user:a${k}`, verb: "post", object: `note:${j}`, refs: [`note:${j}`], custom: { text: `post ${j} by a${k}` } },
      });
      if (res.warnings?.length) warned++;
    });
    if (warned) throw new Error(`${warned} activities answered warnings (actor without a user record?)`);
    const entries = c.db.collection("feed_entries");
    const filter = { tenant_id: c.tenant.id, feed: "timeline:reader" };
    await until("fan-out to timeline:reader", async () => (await entries.countDocuments(filter)) >= N, { everyMs: 200, timeoutMs: 90_000 });
    log(`  set-up: ${AUTHORS} authors, ${N} activities, each with a note ref; timeline:reader has all ${N} entries by fan-out (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

    // Check both paths answer the same pages before loading them.
    const reader = await userToken(c.tenant, "reader");
    const headers = { authorization: `Bearer ${reader}` };
    const path = `/v1/feeds/timeline/reader?limit=${LIMIT}`;
    const p1 = await api(c.url, "GET", path, { token: reader });
    if (p1.results?.length !== LIMIT || !p1.next) throw new Error(`page 1 answered ${p1.results?.length} activities, next ${p1.next}`);
    if (p1.results.some((a) => !a.actor_user || !p1.objects?.[a.refs[0]])) throw new Error("page 1: an activity without actor_user or its object");
    const p2 = await api(c.url, "GET", `${path}&next=${encodeURIComponent(p1.next)}`, { token: reader });
    const bare = c.helper(
      startNode(join(benchDir, "bare-feed.mjs"), { env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: c.namespace, BENCH_TENANT: c.tenant.id }, name: "bare-feed" }),
    );
    const { url: bareUrl } = await bare.ready;
    const b1 = await api(bareUrl, "GET", path);
    const b2 = await api(bareUrl, "GET", `${path}&next=${encodeURIComponent(b1.next)}`);
    const ids = (p) => p.results.map((a) => a.id).join();
    if (ids(b1) !== ids(p1) || ids(b2) !== ids(p2)) throw new Error("the bare route and the full path answer different pages");
    if (b1.results.some((a) => !a.actor_user || !b1.objects[a.refs[0]])) throw new Error("bare page 1: an activity without actor_user or its object");

    // Cold: the head keys of timeline:reader, the cached activities of page 1, and the read-cache
    // entries of its actor users and objects.
    // Keys as kit's tenantKey names them: <namespace>:{t:<tenant>}:<parts> (one hash slot per tenant).
    const key = (...p) => [c.namespace, `{t:${c.tenant.id}}`, ...p].join(":");
    const readCacheKeys = [
      ...new Set(p1.results.map((a) => key("rc", "user", a.actor.slice("user:".length)))),
      ...new Set(p1.results.flatMap((a) => a.refs.map((r) => key("rc", "object", r)))),
    ];
    const flushKeys = [key("head", "timeline:reader"), key("headp", "timeline:reader"), key("headc", "timeline:reader"), ...p1.results.map((a) => key("act", a.id)), ...readCacheKeys];
    const flushSet = { keys: flushKeys, activityKeys: p1.results.length };
    if (!(await c.redis.exists(flushKeys[0]))) throw new Error(`no head at ${flushKeys[0]} after a first-page read`);
    const cachedNow = await c.redis.exists(...readCacheKeys);
    if (cachedNow !== readCacheKeys.length) throw new Error(`${cachedNow} of ${readCacheKeys.length} read-cache keys after a first-page read (key names changed?)`);

    const full1 = `${c.url}${path}`;
    const targets = [
      { name: "warm", url: full1, headers, pid: c.gatewayPid, prime: { url: full1, headers } },
      { name: "cold", url: full1, headers, pid: c.gatewayPid },
      { name: "floor", url: `${bareUrl}${path}`, pid: bare.child.pid },
      { name: "page2", url: `${c.url}${path}&next=${encodeURIComponent(p1.next)}`, headers, pid: c.gatewayPid },
      { name: "floor2", url: `${bareUrl}${path}&next=${encodeURIComponent(b1.next)}`, pid: bare.child.pid },
    ];
    log(
      `  load: ${targets.map((t) => t.name).join(", ")}; ${connections} connections, ${warmupS} s warm-up each, ` +
        `${rounds} × ${roundS} s rounds each, taking turns; cold rounds delete ${flushKeys.length} keys every ${flushEveryMs} ms`,
    );
    const flush = { flushes: 0, headRebuilt: 0, actRefilled: 0, readCacheRefilled: 0 };
    let flusher = null;
    const profiling = Boolean(cpuProfDir && c.gatewayPid);
    let profStarted = false;
    const r = await load(targets, { connections, warmupS, roundS, rounds, pauseMs: 100 }, {
      onRound: async (m) => {
        if (profiling && !profStarted) {
          profStarted = true;
          process.kill(c.gatewayPid, "SIGUSR2");
        }
        if (m.target === "cold") flusher = startFlusher(c.redis, flushSet, flushEveryMs);
      },
      onRoundEnd: async (m) => {
        if (m.target !== "cold" || !flusher) return;
        await flusher.stop();
        for (const k of Object.keys(flush)) flush[k] += flusher.stats[k];
        flusher = null;
      },
    });
    let cpuProfile;
    if (profiling) {
      process.kill(c.gatewayPid, "SIGUSR2");
      await sleep(1500);
      cpuProfile = join(cpuProfDir, `gateway-${c.gatewayPid}.cpuprofile`);
      log(`  CPU profile of the gateway over the measured rounds: ${cpuProfile}`);
    }
    log(`  ${machineNote(r.machine)}`);
    for (const t of targets) log(`  ${t.name}: ${fmt(r.targets[t.name])}`);
    const cold = r.targets.cold;
    // Each request that misses the head rebuilds it once: flushes that found a head are a lower
    // bound of the requests that missed (several misses between two flushes count once).
    flush.headMissLowerBound = flush.headRebuilt / cold.sent;
    flush.actMissLowerBound = flush.actRefilled / LIMIT / cold.sent;
    log(
      `  cold rounds: ${flush.flushes} flushes; the head had been rebuilt before ${flush.headRebuilt} of them, ` +
        `${flush.actRefilled} activity keys and ${flush.readCacheRefilled} user/object read-cache keys refilled; ${cold.sent} requests sent (${cold.ok} answered within the rounds): at least ${(flush.headMissLowerBound * 100).toFixed(0)}% missed the head, ` +
        `at least ${(flush.actMissLowerBound * 100).toFixed(0)}% (in page equivalents) missed the activity cache`,
    );
    return {
      metrics: await metricsExcerpt(c.system),
      namespace: c.namespace,
      loadAverage: c.loadAverage,
      activities: N,
      load: { connections, warmupS, roundS, rounds, flushEveryMs },
      machine: r.machine,
      ...r.targets,
      flush,
      cpuProfile,
      ratios: {
        warm: r.targets.warm.rps / r.targets.floor.rps,
        cold: cold.rps / r.targets.floor.rps,
        page2: r.targets.page2.rps / r.targets.floor2.rps,
      },
    };
  }, { cpuProfDir });
}

/** Inserts `n` entry-shaped documents into a fresh scratch collection (feed_entries' indexes). */
export async function insertFloor(c, n, name) {
  await copyIndexes(c.db, "feed_entries", name);
  const coll = c.db.collection(name);
  const activityId = randomUUID();
  const time = new Date();
  const docs = range(n).map((i) => ({
    _id: `${c.tenant.id}/timeline:f${i}/${activityId}`,
    tenant_id: c.tenant.id,
    feed: `timeline:f${i}`,
    activity_id: activityId,
    time,
    origin: "user:celeb",
  }));
  const t0 = performance.now();
  for (let i = 0; i < n; i += 500) await coll.insertMany(docs.slice(i, i + 500), { ordered: false });
  const seconds = (performance.now() - t0) / 1000;
  const count = await coll.countDocuments({ activity_id: activityId });
  if (count !== n) throw new Error(`floor insert: ${count} of ${n} documents`);
  await coll.drop();
  return { seconds, entriesPerS: n / seconds };
}

/** Bench 7: one activity to `followers` followers, vs bare insertMany. */
export async function runFanout({ infra, log, followers = 10_000 }) {
  return withSystem(infra, log, "bench 7", async (c) => {
    await api(c.url, "PUT", "/v1/users/celeb", { token: c.tenant.token, body: { custom: { name: "Celeb" } } });
    // Straight into the follows collection: the batch route took minutes on a busy machine.
    const seedS = await seedFollowers(c, "user:celeb", followers);
    log(`  set-up: ${followers} follow edges of user:celeb stored directly in ${seedS.toFixed(1)} s`);

    const floorBefore = await insertFloor(c, followers, "bench_entries_floor_a");
    log(`  floor (before): ${followers} entries in ${floorBefore.seconds.toFixed(2)} s = ${floorBefore.entriesPerS.toFixed(0)} entries/s`);

    // Done when the fan-out work queue is empty (a chunk task is acked only after its entries are
    // written; the activity task only after it has published every chunk), polled every 25 ms
    // (a stream info request; every 100 ms added 0-100 ms, ~5% on average, to a ~1 s figure),
    // then confirmed by counting the activity's entries. Not countDocuments every poll: on
    // FerretDB v1 a count of 10,000 matching entries costs ~0.5 s of database CPU (the matching
    // documents are fetched and decoded), which would take one of the two cores from the fan-out.
    const entries = c.db.collection("feed_entries");
    const queue = `${c.namespace}_fanout`;
    const depth = async () => (await c.jsm.streams.info(queue)).state.messages;
    const meter = cpuMeter([c.gatewayPid]);
    const infra0 = infraSeconds();
    const la = loadavg()[0];
    const start = performance.now();
    const posted = await api(c.url, "POST", "/v1/feeds/user/celeb/activities", {
      token: c.tenant.token,
      body: { actor: "user:celeb", verb: "post", object: "note:1", custom: { text: "hello, followers" } },
    });
    const postMs = performance.now() - start;
    const want = followers + 1; // every follower feed and the origin feed
    const samples = [];
    let emptyAt = null;
    let confirmations = 0;
    await until(
      "fan-out",
      async () => {
        const d = await depth();
        const at = (performance.now() - start) / 1000;
        samples.push([Number(at.toFixed(3)), d]);
        if (d > 0) {
          emptyAt = null;
          return false;
        }
        emptyAt ??= at;
        confirmations++;
        const n = await entries.countDocuments({ tenant_id: c.tenant.id, activity_id: posted.id });
        if (n >= want) return true;
        emptyAt = null; // a task between redeliveries, or dead-lettered: keep waiting
        log(`  queue empty but ${n} of ${want} entries; waiting`);
        await sleep(1000);
        return false;
      },
      { everyMs: 25, timeoutMs: 300_000 },
    );
    const seconds = emptyAt;
    const cpu = meter.end();
    const infraCores = (infraSeconds() - infra0) / ((performance.now() - start) / 1000);
    const entriesPerS = followers / seconds;
    const dlq = (await c.jsm.streams.info(`${c.namespace}_fanout_dlq`)).state.messages;
    log(
      `  fan-out: the last of ${followers} follower feeds had it after ${seconds.toFixed(2)} s (POST answered in ${postMs.toFixed(0)} ms; ` +
        `${samples.length} queue polls, ${confirmations} count(s); ${dlq} dead-lettered) = ${entriesPerS.toFixed(0)} entries/s; gateway ${(cpu.processCores[0] * 100).toFixed(0)}% core, ` +
        `shared servers ${(infraCores * 100).toFixed(0)}%; other people's work ${cpu.otherCores.toFixed(2)} cores; load average ${la.toFixed(2)}`,
    );

    // Where the time goes: the worker's one pass over the followers (graph's StreamFollowerFeeds:
    // one unsorted cursor, 500 a batch) against what keyset pages of 500 would cost (FerretDB
    // fetches and sorts the whole follower set for each page), and the activity's entry count.
    const follows = c.db.collection("follows");
    const timed = async (fn) => {
      const t = performance.now();
      const v = await fn();
      return [performance.now() - t, v];
    };
    const base = { tenant_id: c.tenant.id, target_feed: "user:celeb" };
    const [passMs, all] = await timed(() => follows.find(base, { projection: { source_feed: 1 }, batchSize: 500 }).toArray());
    const [pageMs] = await timed(() => follows.find(base).sort({ created_at: -1, _id: -1 }).limit(501).toArray());
    const [countMs] = await timed(() => entries.countDocuments({ tenant_id: c.tenant.id, activity_id: posted.id }));
    const diagnosis = { followerPassMs: passMs, allFollowers: all.length, keysetPageMs: pageMs, keysetPages: Math.ceil(followers / 500), countMs };
    log(
      `  diagnosis: the follower pass (one cursor over all ${all.length} followers) ${passMs.toFixed(0)} ms; one keyset page of 500 would cost ${pageMs.toFixed(0)} ms ` +
        `(× ${diagnosis.keysetPages} pages); countDocuments of the activity's entries ${countMs.toFixed(0)} ms`,
    );

    const floorAfter = await insertFloor(c, followers, "bench_entries_floor_b");
    log(`  floor (after): ${followers} entries in ${floorAfter.seconds.toFixed(2)} s = ${floorAfter.entriesPerS.toFixed(0)} entries/s`);
    const floorPerS = (floorBefore.entriesPerS + floorAfter.entriesPerS) / 2;
    return {
      namespace: c.namespace,
      loadAverage: la,
      followers,
      seconds,
      postMs,
      entriesPerS,
      queueSamples: samples,
      deadLettered: dlq,
      diagnosis,
      gatewayCores: cpu.processCores[0],
      infraCores,
      machine: { machineCores: cpu.machineCores, infraCores: cpu.infraCores, otherCores: cpu.otherCores, otherTop: cpu.otherTop },
      floor: { before: floorBefore, after: floorAfter, entriesPerS: floorPerS },
      ratio: entriesPerS / floorPerS,
    };
  });
}

const ROUTE = "POST /v1/feeds/:group/:id/activities";

/** Bench 8: add-activity throughput with fan-out to 100 followers per author, then the drain. */
export async function runWrites({ infra, log, authors = 10, followersEach = 100, fewFollowers = 10, seconds = 10, bareSeconds = 5, warmupS = 1, connections = 10, cpuProfDir }) {
  return withSystem(infra, log, "bench 8", async (c) => {
    const { token } = c.tenant;
    const t0 = Date.now();
    // Authors a* have followersEach followers each, authors b* fewFollowers.
    const groups = [
      { prefix: "a", followers: followersEach },
      { prefix: "b", followers: fewFollowers },
    ];
    for (const { prefix, followers } of groups) {
      await Promise.all(range(authors).map((k) => api(c.url, "PUT", `/v1/users/${prefix}${k}`, { token, body: { custom: { name: `Author ${prefix}${k}` } } })));
      for (let k = 0; k < authors; k++) {
        for (let i = 0; i < followers; i += 100) {
          await batch(c, "/v1/batch/follows", "follows", range(i, Math.min(followers, i + 100)).map((j) => ({ source: `timeline:w${prefix}${k}_${j}`, target: `user:${prefix}${k}` })));
        }
      }
    }
    log(`  set-up: ${authors} authors × ${fewFollowers} followers, ${authors} authors × ${followersEach} followers (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

    await copyIndexes(c.db, "activities", "bench_activities");
    await copyIndexes(c.db, "feed_entries", "bench_entries");
    await copyIndexes(c.db, "activities", "bench_activities_one");
    const bare = c.helper(
      startNode(join(benchDir, "bare-feed.mjs"), {
        env: {
          MONGO_URL: infra.mongoUrl,
          FEEDS_NAMESPACE: c.namespace,
          BENCH_TENANT: c.tenant.id,
          BENCH_ACTIVITIES: "bench_activities",
          BENCH_ENTRIES: "bench_entries",
          BENCH_ACTIVITIES_ONE: "bench_activities_one",
        },
        name: "bare-feed",
      }),
    );
    const { url: bareUrl } = await bare.ready;
    const body = (a) => JSON.stringify({ actor: `user:${a}`, verb: "post", object: `note:${a}`, custom: { text: "load" } });
    const json = { "content-type": "application/json" };
    const auth = { authorization: `Bearer ${token}` };
    const requests = (h, prefix = "", author = "a") =>
      range(authors).map((k) => ({ method: "POST", path: `${prefix}/v1/feeds/user/${author}${k}/activities`, headers: h, body: body(`${author}${k}`) }));
    const full = { ...json, ...auth };
    // The floor right before the target it is the floor of (the machine's load drifts).
    const targets = [
      { name: "one", url: bareUrl, method: "POST", headers: json, requests: requests(json, "/one"), roundS: bareSeconds, pid: bare.child.pid },
      { name: "few", url: c.url, method: "POST", headers: full, requests: requests(full, "", "b"), roundS: seconds, pid: c.gatewayPid },
      { name: "bare", url: bareUrl, method: "POST", headers: json, requests: requests(json), roundS: bareSeconds, pid: bare.child.pid },
      { name: "full", url: c.url, method: "POST", headers: full, requests: requests(full), roundS: seconds, pid: c.gatewayPid },
    ];
    const fewFeeds = range(authors).map((k) => `user:b${k}`);
    log(`  load: one insertOne ${bareSeconds} s, few (${fewFollowers} followers) ${seconds} s, bare two inserts ${bareSeconds} s, then full (${followersEach} followers) ${seconds} s (${connections} connections, ${warmupS} s warm-up each, authors rotated per request)`);

    const activities = c.db.collection("activities");
    const entries = c.db.collection("feed_entries");
    const stream = `${c.namespace}_fanout`;
    const backlog = async () => (await c.jsm.streams.info(stream)).state.messages;
    const counts = async () => {
      const [a, few, e] = await Promise.all([
        activities.countDocuments({ tenant_id: c.tenant.id }),
        activities.countDocuments({ tenant_id: c.tenant.id, origin_feed: { $in: fewFeeds } }),
        entries.countDocuments({ tenant_id: c.tenant.id }),
      ]);
      return { activities: a, few, entries: e, want: (a - few) * (followersEach + 1) + few * (fewFollowers + 1) };
    };
    let fullStart = null;
    let stop = null;
    let drained = null;
    let polls = 0;
    // Commands per add: those the driver started for the route (warm-up and round) over the
    // activities stored meanwhile; background work (fan-out worker, relays) over the same span
    // up to the drain, as context.
    const metricsUrl = c.system.metrics.gateway;
    const [routeBefore, backgroundBefore, activitiesBefore] = await Promise.all([
      mongoCommands(metricsUrl, ROUTE),
      mongoCommands(metricsUrl, "background"),
      activities.countDocuments({ tenant_id: c.tenant.id }),
    ]);
    let routeCommands = null;
    const profiled = new Set(["few", "full"]);
    const r = await load(targets, { connections, warmupS, roundS: seconds, rounds: 1, sequential: true, pauseMs: 0 }, {
      onRound: async (m) => {
        if (profiled.has(m.target) && cpuProfDir && c.gatewayPid) process.kill(c.gatewayPid, "SIGUSR2");
        if (m.target === "full") fullStart ??= performance.now();
      },
      onRoundEnd: async (m) => {
        if (m.target === "few" && cpuProfDir && c.gatewayPid) {
          // The profiler writes gateway-<pid>.cpuprofile on the second signal; the full round's
          // profile would take that name next.
          process.kill(c.gatewayPid, "SIGUSR2");
          const written = join(cpuProfDir, `gateway-${c.gatewayPid}.cpuprofile`);
          const few = join(cpuProfDir, `gateway-${c.gatewayPid}-few.cpuprofile`);
          await until("the few round's CPU profile", async () => (existsSync(written) ? true : null), { everyMs: 100, timeoutMs: 30_000 });
          await sleep(500); // written in one call; let it finish
          renameSync(written, few);
          log(`  CPU profile of the gateway over the few round: ${few}`);
        }
        if (m.target !== "full") return;
        if (cpuProfDir && c.gatewayPid) {
          process.kill(c.gatewayPid, "SIGUSR2");
          log(`  CPU profile of the gateway over the measured round: ${join(cpuProfDir, `gateway-${c.gatewayPid}.cpuprofile`)}`);
        }
        // Queue depth and activities only: counting the entries (tens of thousands) would cost
        // FerretDB seconds of CPU in the middle of the drain being measured.
        const at = performance.now();
        const [messages, acts, routeAfter] = await Promise.all([
          backlog(),
          activities.countDocuments({ tenant_id: c.tenant.id }),
          mongoCommands(metricsUrl, ROUTE),
        ]);
        routeCommands = commandsSince(routeBefore, routeAfter);
        stop = { at, messages, activities: acts };
        // Drained: the fan-out work queue is empty (polled every 100 ms), confirmed by the counts.
        drained = await until(
          "fan-out backlog",
          async () => {
            polls++;
            if ((await backlog()) > 0) return null;
            const done = performance.now();
            const n = await counts();
            if (n.entries >= n.want) return { at: done, ...n };
            log(`  queue empty but ${n.entries} of ${n.want} entries; waiting`);
            return null;
          },
          { everyMs: 100, timeoutMs: 300_000 },
        );
      },
    });
    // The warm-up of the full path (1 s before its round) also posted: count from its start.
    const warmStart = fullStart - warmupS * 1000;
    const drainS = (drained.at - stop.at) / 1000;
    const followerEntries = (drained.activities - drained.few) * followersEach;
    const totalS = (drained.at - warmStart) / 1000;
    const background = commandsSince(backgroundBefore, await mongoCommands(metricsUrl, "background"));
    const adds = stop.activities - activitiesBefore;
    const perAdd = (x) => Object.fromEntries(Object.entries(x.byName).map(([k, n]) => [k, Number((n / adds).toFixed(2))]));
    log(`  ${machineNote(r.machine)}`);
    for (const t of targets) log(`  ${t.name}: ${fmt(r.targets[t.name])}`);
    log(
      `  MongoDB commands for ${ROUTE}: ${routeCommands.total} for ${adds} adds = ${(routeCommands.total / adds).toFixed(2)} per add ${JSON.stringify(perAdd(routeCommands))}; ` +
        `the floor: 1 (insert); background (fan-out worker, relays) until the drain: ${(background.total / adds).toFixed(2)} per add ${JSON.stringify(perAdd(background))}`,
    );
    log(
      `  ratio few (${fewFollowers} followers) / one insertOne: ${(r.targets.few.rps / r.targets.one.rps).toFixed(3)} (target ≥ 0.50); ` +
        `full (${followersEach} followers) / one insertOne: ${(r.targets.full.rps / r.targets.one.rps).toFixed(3)}; full / two inserts: ${(r.targets.full.rps / r.targets.bare.rps).toFixed(3)}`,
    );
    // Why the ratio is what it is: on two busy cores, throughput follows CPU per request. The
    // system's own process (gateway, services and fan-out worker in one Node.js event loop) and the
    // shared servers, per add, against the floor's process and servers per insertOne.
    const cpuOf = (x) => ({ process: x.cpu.serverCpuMsPerRequest, shared: x.cpu.infraCpuMsPerRequest, by: x.cpu.infraCpuMsPerRequestBy });
    const cpuWhy = { few: cpuOf(r.targets.few), one: cpuOf(r.targets.one) };
    log(
      `  CPU per add (${fewFollowers} followers) against per insertOne: system process ${cpuWhy.few.process.toFixed(2)} vs ${cpuWhy.one.process.toFixed(2)} ms, ` +
        `shared servers ${cpuWhy.few.shared.toFixed(2)} (${serversText(cpuWhy.few.by)}) vs ${cpuWhy.one.shared.toFixed(2)} (${serversText(cpuWhy.one.by)}) ms: ` +
        `${((cpuWhy.few.process + cpuWhy.few.shared) / (cpuWhy.one.process + cpuWhy.one.shared)).toFixed(2)}× the floor's CPU (≥ 0.50 of its throughput needs ≤ 2×); ` +
        `the system's event loop ${(r.targets.few.cpu.serverCores * 100).toFixed(0)}% of a core`,
    );
    log(
      `  at the end of the load: ${stop.activities} activities, ${stop.messages} fan-out tasks queued; drained ${drainS.toFixed(2)} s later ` +
        `(${drained.activities} activities, ${drained.entries} entries = ${followersEach + 1} each, ${fewFollowers + 1} for the ${drained.few} of the few round); ` +
        `fan-out ${(followerEntries / totalS).toFixed(0)} follower entries/s from the first post to the last entry`,
    );
    return {
      metrics: await metricsExcerpt(c.system),
      namespace: c.namespace,
      loadAverage: c.loadAverage,
      authors,
      followersEach,
      fewFollowers,
      machine: r.machine,
      one: r.targets.one,
      few: r.targets.few,
      bare: r.targets.bare,
      full: r.targets.full,
      adds,
      commandsPerAdd: routeCommands.total / adds,
      commandsByName: routeCommands.byName,
      backgroundCommandsPerAdd: background.total / adds,
      backgroundCommandsByName: background.byName,
      atStop: stop,
      drained,
      drainS,
      followerEntries,
      fanoutEntriesPerS: followerEntries / totalS,
      polls,
      cpuWhy,
      ratio: r.targets.few.rps / r.targets.one.rps,
      ratioFull: r.targets.full.rps / r.targets.one.rps,
      ratioTwoInserts: r.targets.full.rps / r.targets.bare.rps,
    };
  }, { cpuProfDir });
}
