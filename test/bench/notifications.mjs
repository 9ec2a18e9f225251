// The notification page, measured: GET /v1/notifications?limit=20 through the gateway (user
// token; the notification service runs its keyset query and two counts, identity answers the
// actors from its read cache) beside a bare Fastify route issuing the same MongoDB queries
// (bare-notifications.mjs), with and without reading the actors' user records from MongoDB.
// One-process system on a fresh namespace (dropped afterwards); 200 notifications for one owner
// (50 real follows and 150 reactions as the engagement service publishes them) from 50 users.
//
//   node test/bench/notifications.mjs [--skip-build] [--rounds=4] [--connections=10]
//
// Standalone for now (the bench item folds it into `npm run bench`); exports runNotificationPage.
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { SignJWT } from "jose";
import { MongoClient } from "mongodb";
import { startSystem } from "../../scripts/lib/system.mjs";
import { api, benchDir, dropNamespaceSafely, namespaceHelpers, serverToken, sleep, startNode, started, systemEnv } from "./lib.mjs";

const OWNER = "reader";
const USERS = 50;
const NOTIFICATIONS = 200;

export async function runNotificationPage({ infra, log, rounds = 4, roundS = 3, warmupS = 1, connections = 10 }) {
  const { connectNats, newEvent, publishEvents } = await import("@feeds/kit");
  const { newNamespace } = await namespaceHelpers();
  const namespace = newNamespace("bench");
  const env = systemEnv(infra, namespace);
  const system = await startSystem({ env });
  for (const p of system.processes) started.add(p.child);
  const mongo = new MongoClient(infra.mongoUrl, { serverSelectionTimeoutMS: 3000, maxPoolSize: 4 });
  const nats = await connectNats({ NATS_URL: infra.natsUrl, FEEDS_NAMESPACE: namespace }, "bench");
  let bare;
  try {
    await mongo.connect();
    const { token: staff } = await api(system.url, "POST", "/operator/login", { body: { email: env.BOOTSTRAP_STAFF_EMAIL, password: env.BOOTSTRAP_STAFF_PASSWORD } });
    const created = await api(system.url, "POST", "/admin/tenants", { token: staff, body: { name: "notifications bench", rate_limit_per_minute: 10_000_000 } });
    const tenant = { id: created.tenant.id, apiKey: created.tenant.api_key, secret: created.api_secret };
    const server = await serverToken(tenant.apiKey, tenant.secret);
    const user = await new SignJWT({ user_id: OWNER })
      .setProtectedHeader({ alg: "HS256", kid: tenant.apiKey })
      .setIssuedAt()
      .setExpirationTime("2h")
      .sign(new TextEncoder().encode(tenant.secret));
    for (let i = 0; i < USERS; i++) await api(system.url, "PUT", `/v1/users/u${i}`, { token: server, body: { custom: { name: `User ${i}`, avatar: `https://img.example/u${i}.png` } } });
    for (let i = 0; i < USERS; i++) await api(system.url, "POST", `/v1/feeds/timeline/u${i}/follows`, { token: server, body: { target: `user:${OWNER}`, activity_copy_limit: 0 } });
    const t0 = Date.now() - 3_600_000;
    await publishEvents(
      nats,
      Array.from({ length: NOTIFICATIONS - USERS }, (_, i) => {
        const at = new Date(t0 + i * 1000);
        const by = `u${i % USERS}`;
        const data = { id: randomUUID(), activity_id: randomUUID(), user_id: by, kind: "like", created_at: at.toISOString() };
        return newEvent("reaction.added", tenant.id, data, { at, meta: { activity_actor: `user:${OWNER}`, actor: `user:${by}` } });
      }),
    );
    const coll = mongo.db(namespace).collection("notifications");
    for (let tries = 0; (await coll.countDocuments({ tenant_id: tenant.id, owner: OWNER })) < NOTIFICATIONS; tries++) {
      if (tries > 600) throw new Error("the notifications did not all arrive");
      await sleep(100);
    }
    log(`  set-up: ${NOTIFICATIONS} notifications of ${OWNER} (${USERS} follows, ${NOTIFICATIONS - USERS} reactions) from ${USERS} users with records`);

    bare = startNode(join(benchDir, "bare-notifications.mjs"), { env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: namespace, BENCH_TENANT: tenant.id }, name: "bare-notifications" });
    const { url: bareUrl } = await bare.ready;
    const path = "/v1/notifications?limit=20";
    const full = await api(system.url, "GET", path, { token: user });
    const floor = await api(bareUrl, "GET", `${path}&owner=${OWNER}`);
    const same = (a, b) => JSON.stringify(a.results.map((n) => [n.id, n.actor_user])) === JSON.stringify(b.results.map((n) => [n.id, n.actor_user]));
    if (!same(full, floor) || full.unseen !== floor.unseen || full.unseen !== NOTIFICATIONS) throw new Error("the gateway and the floor answer different pages");

    const targets = [
      { name: "gateway", url: `${system.url}${path}`, headers: { authorization: `Bearer ${user}` } },
      { name: "floor", url: `${bareUrl}${path}&owner=${OWNER}` },
      { name: "floorNoUsers", url: `${bareUrl}${path}&owner=${OWNER}&users=0` },
    ];
    log(`  load: ${targets.map((t) => t.name).join(", ")}; ${connections} connections, ${warmupS} s warm-up each, ${rounds} × ${roundS} s rounds each, taking turns`);
    const w = startNode(join(benchDir, "load-worker.mjs"), { args: [JSON.stringify({ targets, connections, warmupS, roundS, rounds, pauseMs: 100 })], name: "load-worker" });
    const r = await w.result;
    const fmt = (x) => `${x.rps.toFixed(0)} req/s (rounds ${x.roundRps.map((v) => v.toFixed(0)).join(", ")}), p50 ${x.p50.toFixed(2)} ms, p99 ${x.p99.toFixed(2)} ms` + (x.non2xx || x.errors ? `; ${x.non2xx} non-2xx, ${x.errors} errors` : "");
    for (const t of targets) log(`  ${t.name}: ${fmt(r.targets[t.name])}`);
    const ratios = { floor: r.targets.gateway.rps / r.targets.floor.rps, floorNoUsers: r.targets.gateway.rps / r.targets.floorNoUsers.rps };
    log(`  gateway / floor: ${(ratios.floor * 100).toFixed(0)}%; gateway / floor without the users query: ${(ratios.floorNoUsers * 100).toFixed(0)}%`);
    return { namespace, ...r.targets, ratios };
  } finally {
    await bare?.stop();
    await system.stop();
    await nats.close().catch(() => undefined);
    await mongo.close().catch(() => undefined);
    await dropNamespaceSafely(namespace, infra, log).catch((e) => log(`  ${e.message}`));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const arg = (name, d) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
  const { setup, log } = await import("../../scripts/lib/setup.mjs");
  const infra = await setup({ skipBuild: process.argv.includes("--skip-build") });
  const result = await runNotificationPage({ infra, log, rounds: arg("rounds", 4), connections: arg("connections", 10) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
