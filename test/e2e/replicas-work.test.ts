import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { admitted, http, newIp } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { until } from "../support/until.js";
import { scrape, total } from "../support/metrics.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

// Two replicas of the whole system (each a gateway with every service and worker in one process)
// on one set of servers and one namespace: a post to a 5,000-follower feed and a stream of follows
// and reactions through both gateways. Every follower entry, notification and webhook delivery
// exists exactly once, and both replicas' fan-out and notify workers did part of the work.

const FOLLOWERS = 5_000;
const STREAM = 40; // follows of user:star, and reactions on the big post, each

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


describe("two replicas share the work and do none of it twice", () => {
  const namespace = newNamespace("work");
  const staff = { email: "staff@work.test", password: randomBytes(12).toString("base64url") };
  let infra: Awaited<ReturnType<typeof testInfra>>;
  const replicas: RunningSystem[] = [];
  let mongo: MongoClient;
  let receiver: Receiver;

  beforeAll(async () => {
    infra = await testInfra();
    const env = {
      ...infra.env,
      FEEDS_NAMESPACE: namespace,
      BOOTSTRAP_STAFF_EMAIL: staff.email,
      BOOTSTRAP_STAFF_PASSWORD: staff.password,
      TRUST_PROXY: "1",
      WEBHOOK_ALLOW_PRIVATE: "1",
      LOG_LEVEL: "fatal",
      DEFAULT_RATE_LIMIT_PER_MINUTE: "1000000",
      BUILD_VERSION: inject("buildVersion"),
    };
    // One after the other, each kept as soon as it runs: afterAll stops whatever started.
    for (let i = 0; i < 2; i++) replicas.push(await startSystem({ env }));
    mongo = new MongoClient(infra.mongoUrl);
    receiver = await startReceiver();
  }, 240_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await receiver?.close();
    await mongo?.close();
    if (infra) await dropNamespace(namespace, infra);
  });

  it("a 5,000-follower post and streamed follows and reactions: every entry, notification and delivery once; both replicas worked", { timeout: 600_000 }, async () => {
    const [a, b] = replicas as [RunningSystem, RunningSystem];
    const at = (i: number) => (i % 2 === 0 ? a.url : b.url);
    const login = await http("POST", "/operator/login", { url: a.url, ip: newIp(), body: staff });
    const created = await http("POST", "/admin/tenants", { url: a.url, token: login.body.token, body: { name: "work" } });
    expect(created.status).toBe(201);
    const token = await createServerToken(created.body.tenant.api_key, created.body.api_secret);
    const hook = await http("POST", "/v1/webhooks", { url: b.url, token, body: { url: receiver.url("/hook") } });
    expect(hook.status).toBe(201);
    receiver.secret("/hook", hook.body.signing_secret);

    // Quiet imports: 5,000 followers of user:celeb through both gateways; they notify nobody.
    for (let i = 0; i < FOLLOWERS; i += 100) {
      const follows = Array.from({ length: 100 }, (_, j) => ({ source: `timeline:f${i + j}`, target: "user:celeb" }));
      const res = await http("POST", "/v1/batch/follows", { url: at(i / 100), token, body: { follows } });
      expect(res.status).toBe(200);
      expect(res.body.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    }
    const before = await Promise.all(replicas.map((r) => scrape(r.metrics.gateway)));

    const posted = await http("POST", "/v1/feeds/user/celeb/activities", {
      url: a.url,
      token,
      body: { actor: "user:celeb", verb: "post", object: "note:1", foreign_id: "big-1", time: new Date().toISOString() },
    });
    expect(posted.status).toBe(201);
    const activityId = posted.body.id as string;

    // The stream, through both gateways at once: follows of user:star (each notifies star) and
    // reactions on the big post (each notifies celeb). 40 at once on each gateway while the
    // fan-out loads the store may meet the production overload guard: a shed request did no
    // work and is sent again after its Retry-After, as a client does.
    const streamed = await Promise.all([
      ...Array.from({ length: STREAM }, (_, i) => admitted(() => http("POST", `/v1/feeds/user/fan${i}/follows`, { url: at(i), token, body: { target: "user:star" } }))),
      ...Array.from({ length: STREAM }, (_, i) => admitted(() => http("POST", `/v1/activities/${activityId}/reactions`, { url: at(i + 1), token, body: { kind: "like", user_id: `fan${i}` } }))),
    ]);
    expect(streamed.map((r) => r.status)).toEqual(Array(2 * STREAM).fill(201));

    // Every follower feed holds the post once (one entry per feed and activity by key): 5,000 of them.
    const entries = mongo.db(namespace).collection("feed_entries");
    await until("5,000 follower entries", async () => ((await entries.countDocuments({ activity_id: activityId, feed: /^timeline:/ })) === FOLLOWERS ? true : undefined), 300_000);
    expect(new Set((await entries.find({ activity_id: activityId, feed: /^timeline:/ }, { projection: { feed: 1 } }).toArray()).map((e) => e.feed)).size).toBe(FOLLOWERS);

    // Notifications: one per follow for star, one per reaction for celeb, never a second.
    const notifications = async (owner: string): Promise<{ verb: string; actor: string }[]> => {
      const out: { verb: string; actor: string }[] = [];
      let next: string | null = null;
      do {
        const res: { status: number; body: any } = await http("GET", `/v1/notifications?owner=${owner}&limit=100${next ? `&next=${next}` : ""}`, { url: b.url, token });
        expect(res.status).toBe(200);
        out.push(...res.body.results.map((n: { verb: string; actor: string }) => ({ verb: n.verb, actor: n.actor })));
        next = res.body.next;
      } while (next);
      return out;
    };
    const fans = Array.from({ length: STREAM }, (_, i) => `user:fan${i}`).sort();
    await until("every notification", async () => ((await notifications("star")).length >= STREAM && (await notifications("celeb")).length >= STREAM ? true : undefined), 120_000);
    const [star, celeb] = [await notifications("star"), await notifications("celeb")];
    expect(star.map((n) => n.actor).sort()).toEqual(fans);
    expect(new Set(star.map((n) => n.verb))).toEqual(new Set(["follow"]));
    expect(celeb.map((n) => n.actor).sort()).toEqual(fans);
    expect(new Set(celeb.map((n) => n.verb))).toEqual(new Set(["react"]));

    // Webhooks: activity.added once, follow.created and reaction.added once per act; no event twice.
    const expected = { "activity.added": 1, "follow.created": STREAM, "reaction.added": STREAM };
    const delivered = () => receiver.delivered("/hook");
    const byType = () => {
      const out: Record<string, number> = {};
      for (const d of delivered()) out[String(d.event.type)] = (out[String(d.event.type)] ?? 0) + 1;
      return out;
    };
    await until("every webhook delivery", async () => (Object.entries(expected).every(([t, n]) => (byType()[t] ?? 0) >= n) ? true : undefined), 120_000);
    await sleep(2_000); // a duplicate would come now
    expect(byType()).toEqual(expected);
    const ids = delivered().map((d) => String(d.headers["webhook-id"]));
    expect(new Set(ids).size).toBe(ids.length);

    // Both replicas' workers took part: fan-out chunks (11 tasks: the post and 10 chunks of 500)
    // and notify events (81: the post, 40 follows, 40 reactions) are split between them.
    const after = await Promise.all(replicas.map((r) => scrape(r.metrics.gateway)));
    const done = (i: number, queue: string, consumer: string) =>
      total(after[i] as Map<string, number>, "feeds_queue_tasks_total", { queue, consumer, outcome: "done" }) -
      total(before[i] as Map<string, number>, "feeds_queue_tasks_total", { queue, consumer, outcome: "done" });
    const fanout = [done(0, "fanout", "worker"), done(1, "fanout", "worker")];
    const notify = [done(0, "notify", "events"), done(1, "notify", "events")];
    expect(fanout.every((n) => n > 0), `fan-out tasks per replica: ${fanout.join(", ")}`).toBe(true);
    expect(notify.every((n) => n > 0), `notify tasks per replica: ${notify.join(", ")}`).toBe(true);
    expect(fanout[0]! + fanout[1]!).toBe(1 + FOLLOWERS / 500);
    expect(notify[0]! + notify[1]!).toBe(1 + 2 * STREAM);
  });
});
