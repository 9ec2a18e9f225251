// Bench 9 of `npm run bench`: reactions per second with their count updates. Many users react
// ("like") at once on 100 activities through POST /v1/activities/{id}/reactions (server token
// naming user_id); each answer comes only after the activity's reaction_counts and version moved
// (the engagement service stores the reaction with its pending change, then the feed service makes
// the once-only increment of the activity). Floor: as many plain reaction insertOnes each followed
// by the `$inc` of its activity, through a bare Fastify route (bare-reactions.mjs), in rounds
// taking turns with the reactions' (each floor round makes as many as the reaction round before it
// created). Beside them (info) the ceiling: the floor's route plus the plain writes of the
// notification each reaction makes (bare-reactions.mjs with BENCH_NOTIFY). After the load, every
// activity's reaction_counts must equal its reaction records; the MongoDB commands each reaction
// cost on its request path are counted (the background's not).
import { join } from "node:path";
import { copyNotifyIndexes } from "./bare-notify.mjs";
import { api, benchDir, commandsSince, mongoCommands, startNode } from "./lib.mjs";
import { QUIET, copyIndexes, profiledLoad, fmt, load, machineNote, pool, withSystem } from "./system.mjs";

export async function runReactions({ infra, log, activities = 100, rounds = 4, roundS = 3, warmupS = 1, connections = 10, cpuProfDir }) {
  return withSystem(infra, log, "bench 9", async (c) => {
    const { token } = c.tenant;
    await api(c.url, "PUT", "/v1/users/author", { token, body: { custom: { name: "Author" } } });
    const ids = new Array(activities);
    await pool(activities, 8, async (i) => {
      ids[i] = (await api(c.url, "POST", "/v1/feeds/user/author/activities", { token, body: { actor: "user:author", verb: "post", object: `note:${i}` } })).id;
    });
    log(`  set-up: ${activities} activities by user:author; reactions come from users u0, u1, … (each on every activity in turn)`);

    await copyIndexes(c.db, "reactions", "bench_reactions");
    // The floor's activities: one document per activity id, counts empty, as the feed stores them.
    await c.db.collection("bench_activities").insertMany(ids.map((_id) => ({ _id, tenant_id: c.tenant.id, reaction_counts: {}, version: 1 })));
    const bare = c.helper(
      startNode(join(benchDir, "bare-reactions.mjs"), {
        env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: c.namespace, BENCH_TENANT: c.tenant.id, BENCH_REACTIONS: "bench_reactions", BENCH_ACTIVITIES: "bench_activities" },
        name: "bare-reactions",
      }),
    );
    const { url: bareUrl } = await bare.ready;
    await copyIndexes(c.db, "reactions", "bench_n_reactions");
    await copyNotifyIndexes(copyIndexes, c.db, "bench_n");
    const ceiling = c.helper(
      startNode(join(benchDir, "bare-reactions.mjs"), {
        env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: c.namespace, BENCH_TENANT: c.tenant.id, BENCH_REACTIONS: "bench_n_reactions", BENCH_ACTIVITIES: "bench_activities", BENCH_NOTIFY: "bench_n" },
        name: "bare-reactions-notify",
      }),
    );
    const { url: ceilingUrl } = await ceiling.ready;
    const json = { "content-type": "application/json" };
    const make = (prefix) => ({ module: join(benchDir, "reaction-requests.mjs"), args: { activities: ids, kind: "like", prefix } });
    const targets = [
      { name: "reactions", url: c.url, method: "POST", headers: { ...json, authorization: `Bearer ${token}` }, make: make("u"), pid: c.gatewayPid },
      { name: "floor", url: bareUrl, method: "POST", headers: json, make: make("f"), amountFrom: "reactions", pid: bare.child.pid },
      { name: "ceiling", url: ceilingUrl, method: "POST", headers: json, make: make("c"), amountFrom: "reactions", pid: ceiling.child.pid },
    ];
    log(`  load: reactions (${rounds} × ${roundS} s) and floor (as many inserts as the reaction round before), taking turns; ${connections} connections, ${warmupS} s warm-up each`);
    const metricsUrl = c.system.metrics.gateway;
    const ROUTE = "POST /v1/activities/:id/reactions";
    // Off the request path: the outbox's clears (ours, and the feed's of applied ids) and relays.
    const BACKGROUND = ["background", "rpc:feeds.feed.v1.FeedService/ClearReactionChanges"];
    const backgroundOf = async () => Promise.all(BACKGROUND.map((w) => mongoCommands(metricsUrl, w)));
    const commandsBefore = await mongoCommands(metricsUrl, ROUTE);
    const backgroundBefore = await backgroundOf();
    const { r, cpuProfile } = await profiledLoad(c, cpuProfDir, log, () => load(targets, { connections, warmupS, roundS, rounds, pauseMs: 100, quiet: QUIET(c) }));
    const { total: commands, byName } = commandsSince(commandsBefore, await mongoCommands(metricsUrl, ROUTE));
    const background = (await backgroundOf()).map((after, i) => commandsSince(backgroundBefore[i], after));
    log(`  ${machineNote(r.machine)}`);
    for (const t of targets) log(`  ${t.name}: ${fmt(r.targets[t.name])}`);

    // Each answered reaction counted: reaction_counts of every activity = its records.
    const reactions = c.db.collection("reactions");
    const records = await reactions.countDocuments({ tenant_id: c.tenant.id });
    let counted = 0;
    let versions = 0;
    const wrong = [];
    await pool(activities, 4, async (i) => {
      const a = await api(c.url, "GET", `/v1/activities/${ids[i]}`, { token });
      const n = await reactions.countDocuments({ tenant_id: c.tenant.id, activity_id: ids[i] });
      const like = a.reaction_counts?.like ?? 0;
      counted += like;
      versions += a.version ?? 0;
      if (like !== n) wrong.push(`${ids[i]}: reaction_counts.like ${like}, ${n} records`);
    });
    if (wrong.length) throw new Error(`reaction counts differ from the records on ${wrong.length} activities (${wrong[0]})`);
    const floorInserted = await c.db.collection("bench_reactions").countDocuments({});
    log(
      `  after the load: ${records} reactions stored, reaction_counts sum to ${counted} (every activity exact), versions sum to ${versions}; ` +
        `floor inserted ${floorInserted} documents; ${(records / activities).toFixed(0)} reactions per activity; ` +
        `${commands} MongoDB commands for ${ROUTE} = ${(commands / records).toFixed(1)} per reaction (the background's not counted): ` +
        Object.entries(byName)
          .map(([k, n]) => `${k} ${(n / records).toFixed(1)}`)
          .join(", ") +
        `; in the background meanwhile ${background.map((b, i) => `${BACKGROUND[i]}: ${b.total} (${Object.entries(b.byName).map(([k, n]) => `${k} ${n}`).join(", ")})`).join("; ")}`,
    );
    return {
      namespace: c.namespace,
      loadAverage: c.loadAverage,
      activities,
      load: { connections, warmupS, roundS, rounds },
      machine: r.machine,
      reactions: r.targets.reactions,
      floor: r.targets.floor,
      ceiling: r.targets.ceiling,
      stored: { reactions: records, counted, versions, floorInserted },
      // Every request of the load created a reaction (warm-up included): commands per reaction.
      commandsPerReaction: commands / records,
      commandsByName: byName,
      backgroundCommands: Object.fromEntries(background.map((b, i) => [BACKGROUND[i], b])),
      ratio: r.targets.reactions.rps / r.targets.floor.rps,
      cpuProfile,
    };
  }, { cpuProfDir });
}
