import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { connect, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { startNatsCluster, type NatsCluster } from "../../scripts/infra.mjs";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newIp } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { until } from "../support/until.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

// The system on a 3-node NATS cluster with every stream and consumer on 3 replicas
// (NATS_REPLICAS=3). The node leading the fan-out stream is SIGKILLed while a 2,000-follower
// fan-out runs and reactions, comments and follows stream in, and comes back later: every follower
// feed holds each activity exactly once, and every act has exactly one notification and one
// webhook event record.

const FOLLOWERS = 2000;
const POSTS = 3;
/** FEEDS_TEST_NATS_CLUSTER_REPLICAS=1 shows the test failing: the fan-out stream lives on the dead node alone. */
const REPLICAS = Number(process.env.FEEDS_TEST_NATS_CLUSTER_REPLICAS ?? 3);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => process.stdout.write(`[nats-cluster] ${msg}\n`);

describe("a 3-node NATS cluster loses the fan-out stream's leader mid fan-out", () => {
  let cluster: NatsCluster;
  let system: RunningSystem;
  let receiver: Receiver;
  let mongo: MongoClient;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let infra: Awaited<ReturnType<typeof testInfra>>;
  let url = "";
  const namespace = newNamespace("natscl");
  const staff = { email: "staff@natscl.test", password: randomBytes(12).toString("base64url") };

  beforeAll(async () => {
    infra = await testInfra();
    cluster = await startNatsCluster();
    receiver = await startReceiver();
    system = await startSystem({
      env: {
        ...infra.env,
        NATS_URL: cluster.url,
        NATS_REPLICAS: String(REPLICAS),
        FEEDS_NAMESPACE: namespace,
        BUILD_VERSION: inject("buildVersion"),
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "fatal",
        DEFAULT_RATE_LIMIT_PER_MINUTE: "1000000",
        BATCH_RATE_LIMIT_PER_MINUTE: "100000",
        WEBHOOK_ALLOW_PRIVATE: "1",
      },
    });
    url = system.url;
    mongo = new MongoClient(infra.mongoUrl);
    await mongo.connect();
    nc = await connect({ servers: cluster.urls });
    jsm = await nc.jetstreamManager();
  });

  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
    await nc?.close();
    await mongo?.close();
    if (cluster) {
      for (const n of cluster.nodes) if (!n.running) await n.start();
      if (infra) await dropNamespace(namespace, { ...infra, natsUrl: cluster.urls[0] ?? "" });
      await cluster.stop();
    }
  });

  async function tenant() {
    const login = await http("POST", "/operator/login", { url, ip: newIp(), body: staff });
    const created = await http("POST", "/admin/tenants", { url, token: login.body.token, body: { name: "natscl" } });
    expect(created.status).toBe(201);
    return { id: created.body.tenant.id as string, token: await createServerToken(created.body.tenant.api_key, created.body.api_secret) };
  }

  /** Set-up: one batch of follows, sent again if an item failed (a duplicate edge is fine). */
  async function follow(token: string, follows: { source: string; target: string }[]) {
    const send = () => http("POST", "/v1/batch/follows", { url, token, body: { follows } });
    let res = await send();
    for (let i = 0; i < 2 && !(res.status === 200 && res.body.results.every((r: { ok: boolean }) => r.ok)); i++) res = await send();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
  }

  it("every follower entry, notification and webhook event record exists exactly once", { timeout: 300_000 }, async () => {
    const { id: tenantId, token } = await tenant();
    const dest = await http("POST", "/v1/webhooks", { url, token, body: { url: receiver.url("/hook") } });
    expect(dest.status).toBe(201);
    receiver.secret("/hook", dest.body.signing_secret);
    for (let i = 0; i < FOLLOWERS; i += 100) {
      await follow(token, Array.from({ length: 100 }, (_, j) => ({ source: `timeline:f${i + j}`, target: "user:star" })));
    }
    expect((await http("GET", "/v1/feeds/user/star/stats", { url, token })).body.follower_count).toBe(FOLLOWERS);

    // Every queue and its consumers run on the configured replicas.
    const fanoutStream = `${namespace}_fanout`;
    for (const q of ["fanout", "notify", "webhooks"]) {
      for (const s of [`${namespace}_${q}`, `${namespace}_${q}_dlq`]) expect((await jsm.streams.info(s)).config.num_replicas, s).toBe(REPLICAS);
      const consumers: number[] = [];
      for await (const c of jsm.consumers.list(`${namespace}_${q}`)) consumers.push(c.config.num_replicas ?? 0);
      expect(consumers.length, q).toBeGreaterThan(0);
      expect(consumers.every((r) => r === REPLICAS), q).toBe(true);
    }

    const db = mongo.db(namespace);
    const entries = db.collection("feed_entries");
    const post = async (n: number) => {
      const res = await http("POST", "/v1/feeds/user/star/activities", { url, token, body: { actor: "user:star", verb: "post", object: `note:${n}`, foreign_id: `star-${n}`, time: new Date().toISOString() } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    };
    const first = await post(0);
    const t0 = Date.now();
    await until("the first fan-out", async () => ((await entries.countDocuments({ activity_id: first })) === FOLLOWERS + 1 ? true : undefined), 60_000, 100);
    log(`a ${FOLLOWERS}-follower fan-out on the healthy cluster: ${Date.now() - t0} ms`);

    // Reactions and comments on the first post (notifications of user:star) and follows of
    // user:fan (notifications of user:fan, not followers of user:star), 6 at a time.
    const expected = { "reaction.added": 0, "comment.added": 0, "follow.created": 0 };
    let n = 0;
    let failed = 0;
    let shed = 0;
    const act = async (i: number) => {
      const kind = (["reaction.added", "comment.added", "follow.created"] as const)[i % 3] ?? "reaction.added";
      const send = () =>
        kind === "follow.created"
          ? http("POST", `/v1/feeds/timeline/n${i}/follows`, { url, token, body: { target: "user:fan", activity_copy_limit: 0 } })
          : kind === "reaction.added"
            ? http("POST", `/v1/activities/${first}/reactions`, { url, token, body: { kind: "like", user_id: `a${i}` } })
            : http("POST", `/v1/activities/${first}/comments`, { url, token, body: { text: "hi", user_id: `a${i}` } });
      let res = await send();
      // Shed by the gateway's overload guard (writes wait on NATS while a stream has no leader):
      // never executed, so sent again after its Retry-After.
      for (let k = 0; k < 20 && res.status === 429 && res.body?.error?.code === "RATE_LIMITED"; k++) {
        shed++;
        await sleep(1000 * Number(res.headers.get("retry-after") ?? 1));
        res = await send();
      }
      // A write that did not answer 201 may or may not have happened: the test stops at the first.
      if (res.status !== 201) failed++;
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expected[kind]++;
    };
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        await Promise.all(Array.from({ length: 6 }, () => act(n++)));
        await sleep(30);
      }
    })();

    const posts: string[] = [];
    const want = () => posts.map(() => FOLLOWERS + 1);
    const countsOf = () => Promise.all(posts.map((id) => entries.countDocuments({ activity_id: id })));
    let killedAt = 0;
    let whileDown: number[] = [];
    try {
      // The node leading the fan-out stream dies at the first follower entries of the next post.
      const leader = (await jsm.streams.info(fanoutStream)).cluster?.leader ?? "";
      const node = cluster.node(leader);
      if (!node) throw new Error(`no node named ${leader}`);
      posts.push(await post(1));
      const postedAt = Date.now();
      while (Date.now() - postedAt < 3000 && ((await countsOf())[0] ?? 0) <= 1) await sleep(10);
      await node.stop();
      killedAt = Date.now();
      const atKill = (await countsOf())[0] ?? 0;
      log(`killed ${leader} (the fan-out stream's leader; the meta leader was ${await cluster.metaLeader()}) with ${atKill - 1} of ${FOLLOWERS} follower entries written`);
      expect(atKill).toBeLessThan(FOLLOWERS + 1);
      // More posts while it is gone; another node takes over the stream.
      for (let p = 2; p <= POSTS; p++) posts.push(await post(p));
      const elected = await until(
        "a new fan-out stream leader",
        async () => {
          const l = (await jsm.streams.info(fanoutStream)).cluster?.leader;
          return l && l !== leader ? l : undefined;
        },
        60_000,
        100,
      ).catch(() => "none");
      log(`${elected} leads the fan-out stream ${Date.now() - killedAt} ms after the kill`);
      // With the node still down, every post reaches every follower feed: the replicas carry on.
      whileDown = await until("every follower entry while the node is down", async () => {
        const c = await countsOf();
        return c.every((x) => x >= FOLLOWERS + 1) ? c : undefined;
      }, 90_000).catch(countsOf);
      log(`entries per post ${whileDown.join(", ")} (want ${FOLLOWERS + 1} each) ${Date.now() - killedAt} ms after the kill, the node still down`);
      const actsAtKill = n;
      await until("acts while the node is down", async () => (n >= actsAtKill + 60 ? true : undefined), 60_000);
      await node.start();
      log(`${leader} back ${Date.now() - killedAt} ms after the kill`);
    } finally {
      streaming = false;
      await stream;
    }
    expect(failed).toBe(0);
    const dlq = async () => Object.fromEntries(await Promise.all(["fanout", "notify", "webhooks"].map(async (q) => [q, (await jsm.streams.info(`${namespace}_${q}_dlq`)).state.messages] as const)));
    // Logged, not asserted. Right after the node's restart the JetStream API may not answer for a
    // moment (it was the meta leader; a request timed out so once in CI): asked until it does.
    log(`dead letters ${JSON.stringify(await until("the dead-letter counts", dlq, 60_000))}`);
    expect(whileDown).toEqual(want());

    // One notification per act, none twice.
    const acts = expected["reaction.added"] + expected["comment.added"] + expected["follow.created"];
    const notifications = db.collection("notifications");
    const stored = await until("every notification", async () => {
      const c = await notifications.countDocuments({ tenant_id: tenantId });
      return c >= acts ? c : undefined;
    }, 120_000).catch(() => notifications.countDocuments({ tenant_id: tenantId }));
    const actors = (await notifications.find({ tenant_id: tenantId }).toArray()).map((x) => `${x.owner ?? ""}/${x.actor ?? JSON.stringify(x.actors ?? "")}`);
    log(`${acts} acts (${shed} shed and sent again), ${stored} notifications, ${actors.length - new Set(actors).size} repeated`);
    expect(stored).toBe(acts);
    expect(new Set(actors).size).toBe(acts);

    // One webhook event record per act and per post (the first included), each delivered.
    const events = db.collection<{ _id: string; tenant_id: string; event_id: string; event_type: string; status: string }>("webhook_events");
    const wanted = acts + posts.length + 1;
    const records = await until("every webhook event record published", async () => {
      const rs = await events.find({ tenant_id: tenantId }).toArray();
      return rs.length >= wanted && rs.every((r) => r.status === "published") ? rs : undefined;
    }, 120_000).catch(() => events.find({ tenant_id: tenantId }).toArray());
    const byType = (rs: { event_type: string }[]) => Object.fromEntries([...new Set(rs.map((r) => r.event_type))].sort().map((t) => [t, rs.filter((r) => r.event_type === t).length]));
    log(`webhook event records ${records.length} (want ${wanted}) ${JSON.stringify(byType(records))}, ${records.length - new Set(records.map((r) => r.event_id)).size} repeated`);
    expect(byType(records)).toEqual(byType([...Object.entries(expected).flatMap(([t, k]) => Array.from({ length: k }, () => ({ event_type: t }))), ...Array.from({ length: posts.length + 1 }, () => ({ event_type: "activity.added" }))]));
    expect(new Set(records.map((r) => r.event_id)).size).toBe(wanted);
    const delivered = await receiver.waitFor("every event delivered", () => {
      const ids = new Set(receiver.delivered("/hook").map((r) => r.event.id as string));
      return records.every((r) => ids.has(r.event_id)) ? ids : undefined;
    }, 60_000);
    const deliveries = receiver.delivered("/hook").length;
    log(`receiver: ${delivered.size} events, ${deliveries} deliveries (${deliveries - delivered.size} repeated)`);
    expect(delivered.size).toBe(wanted);

    // Nothing was dead-lettered on the way, and the node's return repeated no fan-out: every
    // follower feed holds each post exactly once.
    expect(await dlq()).toEqual({ fanout: 0, notify: 0, webhooks: 0 });
    expect(await countsOf()).toEqual(want());
    for (const id of posts) {
      const distinct = await entries.aggregate([{ $match: { activity_id: id } }, { $group: { _id: "$feed" } }, { $count: "n" }]).toArray();
      expect(distinct[0]?.n).toBe(FOLLOWERS + 1);
    }
  });
});
