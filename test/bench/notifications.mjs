// Bench 10 of `npm run bench`: the notification page, GET /v1/notifications?limit=20 through the
// gateway (user token: the notification service reads its keyset page, the owner's counts from
// the Redis signal, and identity answers the actors from its read cache), beside a bare Fastify
// route issuing the same MongoDB queries (bare-notifications.mjs: the page, the two counts, the
// actors' user records), and the same without the users query (info). Beside them the grouped page
// (issue 23), GET /v1/notifications/groups?limit=20, against the same bare app doing the group
// queries the service does. One-process system on a fresh namespace; 200 notifications for one
// owner (50 real follows, and 150 reactions on 30 activities published as the engagement service
// publishes them) from 50 users with records: 31 groups.
//
//   node test/bench/notifications.mjs [--skip-build] [--rounds=4] [--connections=10]
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { api, benchDir, sleep, startNode } from "./lib.mjs";
import { fmt, load, machineNote, userToken, withSystem } from "./system.mjs";

const OWNER = "reader";
const USERS = 50;
const NOTIFICATIONS = 200;
/** Activities the reactions are spread over: a group of 5 likes each. */
const ACTIVITIES = 30;

export async function runNotificationPage({ infra, log, rounds = 4, roundS = 3, warmupS = 1, connections = 10 }) {
  const { connectNats, newEvent, publishEvents } = await import("@feeds/kit");
  return withSystem(infra, log, "bench 10", async (c) => {
    const { token: server } = c.tenant;
    const nats = await connectNats({ NATS_URL: infra.natsUrl, FEEDS_NAMESPACE: c.namespace }, "bench");
    try {
      for (let i = 0; i < USERS; i++) await api(c.url, "PUT", `/v1/users/u${i}`, { token: server, body: { custom: { name: `User ${i}`, avatar: `https://img.example/u${i}.png` } } });
      for (let i = 0; i < USERS; i++) await api(c.url, "POST", `/v1/feeds/timeline/u${i}/follows`, { token: server, body: { target: `user:${OWNER}`, activity_copy_limit: 0 } });
      const t0 = Date.now() - 3_600_000;
      const activities = Array.from({ length: ACTIVITIES }, () => randomUUID());
      await publishEvents(
        nats,
        Array.from({ length: NOTIFICATIONS - USERS }, (_, i) => {
          const at = new Date(t0 + i * 1000);
          const by = `u${i % USERS}`;
          const data = { id: randomUUID(), activity_id: activities[i % ACTIVITIES], user_id: by, kind: "like", created_at: at.toISOString() };
          return newEvent("reaction.added", c.tenant.id, data, { at, meta: { activity_actor: `user:${OWNER}`, actor: `user:${by}` } });
        }),
      );
    } finally {
      await nats.close().catch(() => undefined);
    }
    const coll = c.db.collection("notifications");
    for (let tries = 0; (await coll.countDocuments({ tenant_id: c.tenant.id, owner: OWNER })) < NOTIFICATIONS; tries++) {
      if (tries > 600) throw new Error("the notifications did not all arrive");
      await sleep(100);
    }
    log(`  set-up: ${NOTIFICATIONS} notifications of ${OWNER} (${USERS} follows, ${NOTIFICATIONS - USERS} reactions) from ${USERS} users with records`);

    const bare = c.helper(
      startNode(join(benchDir, "bare-notifications.mjs"), { env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: c.namespace, BENCH_TENANT: c.tenant.id }, name: "bare-notifications" }),
    );
    const { url: bareUrl } = await bare.ready;
    const user = await userToken(c.tenant, OWNER);
    const path = "/v1/notifications?limit=20";
    const full = await api(c.url, "GET", path, { token: user });
    const floor = await api(bareUrl, "GET", `${path}&owner=${OWNER}`);
    const page = (p) => JSON.stringify(p.results.map((n) => [n.id, n.actor_user]));
    if (page(full) !== page(floor) || full.unseen !== floor.unseen || full.unread !== floor.unread || full.unseen !== NOTIFICATIONS) {
      throw new Error(`the gateway and the floor answer different pages (unseen ${full.unseen} vs ${floor.unseen})`);
    }

    const groupsPath = "/v1/notifications/groups?limit=20";
    const grouped = await api(c.url, "GET", groupsPath, { token: user });
    const groupedFloor = await api(bareUrl, "GET", `${groupsPath}&owner=${OWNER}`);
    const groupsPage = (p) => JSON.stringify(p.results.map((g) => [g.group_key, g.activity_count, g.actor_count, g.actors, g.latest.map((n) => [n.id, n.actor_user])]));
    if (groupsPage(grouped) !== groupsPage(groupedFloor) || grouped.unseen !== groupedFloor.unseen || grouped.unseen !== ACTIVITIES + 1) {
      throw new Error(`the gateway and the floor answer different group pages (unseen ${grouped.unseen} vs ${groupedFloor.unseen})`);
    }

    const targets = [
      { name: "gateway", url: `${c.url}${path}`, headers: { authorization: `Bearer ${user}` }, pid: c.gatewayPid },
      { name: "groups", url: `${c.url}${groupsPath}`, headers: { authorization: `Bearer ${user}` }, pid: c.gatewayPid },
      { name: "groupsFloor", url: `${bareUrl}${groupsPath}&owner=${OWNER}`, pid: bare.child.pid },
      { name: "floor", url: `${bareUrl}${path}&owner=${OWNER}`, pid: bare.child.pid },
      { name: "floorNoUsers", url: `${bareUrl}${path}&owner=${OWNER}&users=0`, pid: bare.child.pid },
    ];
    log(`  load: ${targets.map((t) => t.name).join(", ")}; ${connections} connections, ${warmupS} s warm-up each, ${rounds} × ${roundS} s rounds each, taking turns`);
    const r = await load(targets, { connections, warmupS, roundS, rounds, pauseMs: 100 });
    log(`  ${machineNote(r.machine)}`);
    for (const t of targets) log(`  ${t.name}: ${fmt(r.targets[t.name])}`);
    const ratios = {
      floor: r.targets.gateway.rps / r.targets.floor.rps,
      floorNoUsers: r.targets.gateway.rps / r.targets.floorNoUsers.rps,
      groups: r.targets.groups.rps / r.targets.groupsFloor.rps,
    };
    log(`  gateway / floor: ${(ratios.floor * 100).toFixed(0)}%; gateway / floor without the users query: ${(ratios.floorNoUsers * 100).toFixed(0)}%`);
    log(`  grouped page / its floor: ${(ratios.groups * 100).toFixed(0)}%`);
    return { namespace: c.namespace, loadAverage: c.loadAverage, machine: r.machine, load: { connections, warmupS, roundS, rounds }, ...r.targets, ratios };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const arg = (name, d) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
  const { setup, log } = await import("../../scripts/lib/setup.mjs");
  const infra = await setup({ skipBuild: process.argv.includes("--skip-build") });
  const result = await runNotificationPage({ infra, log, rounds: arg("rounds", 4), connections: arg("connections", 10) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
