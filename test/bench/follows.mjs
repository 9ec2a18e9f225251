// Bench 14 of `npm run bench`: follows per second with their counts. Many feeds follow a set of
// targets at once through POST /v1/feeds/timeline/{id}/follows (server token); each answer comes
// only after the edge is written and both counts moved (the follower's following_count, the
// target's follower_count: once-only $incs), and its history copy task and follow.created went
// out. Floor: a bare Fastify route doing the edge insert and two $inc upserts (bare-follows.mjs),
// in rounds taking turns with the follows' (each floor round makes as many edges as the follow
// round before it). After the load, every target's and source's counts must equal their edges,
// and no edge may hold a pending change. MongoDB commands per follow on the request path come
// from the gateway's command monitoring (the background clears are not counted). Beside them
// (info) the ceiling: the floor's route plus the plain writes of the notification each follow of a
// user feed makes (bare-follows.mjs with BENCH_NOTIFY).
import { join } from "node:path";
import { copyNotifyIndexes } from "./bare-notify.mjs";
import { api, benchDir, commandsSince, mongoCommands, startNode } from "./lib.mjs";
import { QUIET, copyIndexes, profiledLoad, fmt, load, machineNote, until, withSystem } from "./system.mjs";

export async function runFollows({ infra, log, targets = 20, rounds = 4, roundS = 3, warmupS = 1, connections = 10, cpuProfDir }) {
  return withSystem(infra, log, "bench 14", async (c) => {
    const { token } = c.tenant;
    const feeds = Array.from({ length: targets }, (_, i) => `user:star${i}`);
    log(`  set-up: ${targets} targets (user:star0…); follows come from feeds timeline:f0, timeline:f1, … (each follows every target in turn)`);

    // The floor's scratch collections, with the indexes of the real ones (made by the graph at start).
    await until("the graph's indexes", async () => ((await c.db.collection("follows").indexes().catch(() => [])).length > 1 ? true : undefined));
    await copyIndexes(c.db, "follows", "bench_follows");
    await copyIndexes(c.db, "follow_counts", "bench_follow_counts");
    const bare = c.helper(
      startNode(join(benchDir, "bare-follows.mjs"), {
        env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: c.namespace, BENCH_TENANT: c.tenant.id, BENCH_EDGES: "bench_follows", BENCH_COUNTS: "bench_follow_counts" },
        name: "bare-follows",
      }),
    );
    const { url: bareUrl } = await bare.ready;
    await copyIndexes(c.db, "follows", "bench_n_follows");
    await copyIndexes(c.db, "follow_counts", "bench_n_follow_counts");
    await copyNotifyIndexes(copyIndexes, c.db, "bench_n");
    const ceiling = c.helper(
      startNode(join(benchDir, "bare-follows.mjs"), {
        env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: c.namespace, BENCH_TENANT: c.tenant.id, BENCH_EDGES: "bench_n_follows", BENCH_COUNTS: "bench_n_follow_counts", BENCH_NOTIFY: "bench_n" },
        name: "bare-follows-notify",
      }),
    );
    const { url: ceilingUrl } = await ceiling.ready;
    const json = { "content-type": "application/json" };
    const make = (prefix) => ({ module: join(benchDir, "follow-requests.mjs"), args: { targets: feeds, prefix } });
    const loadTargets = [
      { name: "follows", url: c.url, method: "POST", headers: { ...json, authorization: `Bearer ${token}` }, make: make("f"), pid: c.gatewayPid },
      { name: "floor", url: bareUrl, method: "POST", headers: json, make: make("b"), amountFrom: "follows", pid: bare.child.pid },
      { name: "ceiling", url: ceilingUrl, method: "POST", headers: json, make: make("c"), amountFrom: "follows", pid: ceiling.child.pid },
    ];
    log(`  load: follows (${rounds} × ${roundS} s) and floor (as many edges as the follow round before), taking turns; ${connections} connections, ${warmupS} s warm-up each`);
    const metricsUrl = c.system.metrics.gateway;
    const ROUTE = "POST /v1/feeds/:group/:id/follows";
    const commandsBefore = await mongoCommands(metricsUrl, ROUTE);
    const backgroundBefore = await mongoCommands(metricsUrl, "background");
    const { r, cpuProfile } = await profiledLoad(c, cpuProfDir, log, () => load(loadTargets, { connections, warmupS, roundS, rounds, pauseMs: 100, quiet: QUIET(c) }));
    const { total: commands, byName } = commandsSince(commandsBefore, await mongoCommands(metricsUrl, ROUTE));
    const background = commandsSince(backgroundBefore, await mongoCommands(metricsUrl, "background"));
    log(`  ${machineNote(r.machine)}`);
    for (const t of loadTargets) log(`  ${t.name}: ${fmt(r.targets[t.name])}`);

    // Every answered follow counted: each target's follower_count = its edges, each source's following_count = its edges.
    const edges = c.db.collection("follows");
    const stored = await edges.countDocuments({ tenant_id: c.tenant.id });
    const wrong = [];
    let counted = 0;
    for (const feed of feeds) {
      const stats = await api(c.url, "GET", `/v1/feeds/${feed.replace(":", "/")}/stats`, { token });
      const n = await edges.countDocuments({ tenant_id: c.tenant.id, target_feed: feed });
      counted += stats.follower_count;
      if (stats.follower_count !== n) wrong.push(`${feed}: follower_count ${stats.follower_count}, ${n} edges`);
    }
    const sources = [...new Set((await edges.find({ tenant_id: c.tenant.id }, { projection: { source_feed: 1 } }).toArray()).map((e) => e.source_feed))];
    const counts = new Map((await c.db.collection("follow_counts").find({ tenant_id: c.tenant.id }).toArray()).map((d) => [d.feed, d]));
    const bySource = new Map();
    for (const e of await edges.find({ tenant_id: c.tenant.id }, { projection: { source_feed: 1 } }).toArray()) bySource.set(e.source_feed, (bySource.get(e.source_feed) ?? 0) + 1);
    for (const s of sources) if ((counts.get(s)?.following_count ?? 0) !== bySource.get(s)) wrong.push(`${s}: following_count ${counts.get(s)?.following_count}, ${bySource.get(s)} edges`);
    if (wrong.length) throw new Error(`follow counts differ from the edges on ${wrong.length} feeds (${wrong[0]})`);
    await until("every pending change cleared", async () => ((await edges.countDocuments({ tenant_id: c.tenant.id, outbox_pending: true })) === 0 ? true : undefined), { timeoutMs: 30_000 });
    const floorInserted = await c.db.collection("bench_follows").countDocuments({});
    log(
      `  after the load: ${stored} edges stored, follower_counts sum to ${counted} (every target and source exact, nothing pending); ` +
        `floor inserted ${floorInserted} edges; ${commands} MongoDB commands for ${ROUTE} = ${(commands / stored).toFixed(2)} per follow (the background's not counted): ` +
        Object.entries(byName)
          .map(([k, n]) => `${k} ${(n / stored).toFixed(2)}`)
          .join(", ") +
        `; in the background meanwhile ${background.total} (${Object.entries(background.byName).map(([k, n]) => `${k} ${n}`).join(", ")})`,
    );
    return {
      namespace: c.namespace,
      loadAverage: c.loadAverage,
      targets,
      load: { connections, warmupS, roundS, rounds },
      machine: r.machine,
      follows: r.targets.follows,
      floor: r.targets.floor,
      ceiling: r.targets.ceiling,
      stored: { edges: stored, counted, floorInserted },
      // Every request of the load created an edge (warm-up included): commands per follow.
      commandsPerFollow: commands / stored,
      commandsByName: byName,
      backgroundCommands: background,
      ratio: r.targets.follows.rps / r.targets.floor.rps,
      cpuProfile,
    };
  }, { cpuProfDir });
}
