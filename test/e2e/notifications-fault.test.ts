import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats, type Nats } from "@feeds/kit";
import { createServerToken } from "@feeds/node";
import { startPrivateNats, type PrivateServer } from "../../scripts/infra.mjs";
import { startSystem, type RunningProcess, type RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newIp, queueDrained } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { until } from "../support/until.js";

// The notification service dies (SIGKILL, in the middle of its work) while follows, reactions
// and comments stream in; once it is back, every notification is there exactly once. And NATS
// goes away under follows and unfollows. The system runs split (one process per service) in a
// namespace of its own on a private NATS server, so that the notification process alone can be
// killed while the gateway and the graph keep taking follows, and NATS stopped.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


describe("notifications survive the notification service dying mid-stream", () => {
  let system: RunningSystem;
  let url = "";
  let privateNats: PrivateServer;
  let nats: Nats;
  let mongo: MongoClient;
  let infra: Awaited<ReturnType<typeof testInfra>>;
  const namespace = newNamespace("notify");
  const staff = { email: "staff@notify.test", password: randomBytes(12).toString("base64url") };

  beforeAll(async () => {
    infra = await testInfra();
    privateNats = await startPrivateNats();
    system = await startSystem({
      split: true,
      env: {
        ...infra.env,
        NATS_URL: privateNats.url,
        FEEDS_NAMESPACE: namespace,
        BUILD_VERSION: inject("buildVersion"),
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "fatal",
        DEFAULT_RATE_LIMIT_PER_MINUTE: "1000000",
        // The webhook receiver of the first test listens on loopback.
        WEBHOOK_ALLOW_PRIVATE: "1",
      },
    });
    url = system.url;
    nats = await connectNats({ NATS_URL: privateNats.url, FEEDS_NAMESPACE: namespace }, "notify-fault-test");
    mongo = new MongoClient(infra.mongoUrl);
    await mongo.connect();
  });

  afterAll(async () => {
    await system?.stop();
    await nats?.close();
    await mongo?.close();
    if (privateNats && !privateNats.running) await privateNats.start();
    if (infra && privateNats) await dropNamespace(namespace, { ...infra, natsUrl: privateNats.url });
    await privateNats?.stop();
  });

  async function tenant(): Promise<{ id: string; token: string }> {
    const login = await http("POST", "/operator/login", { url, ip: newIp(), body: staff });
    const created = await http("POST", "/admin/tenants", { url, token: login.body.token, body: { name: `notify-${randomBytes(3).toString("hex")}` } });
    expect(created.status).toBe(201);
    return { id: created.body.tenant.id, token: await createServerToken(created.body.tenant.api_key, created.body.api_secret) };
  }

  /** Every notification of `owner`, over every page. */
  async function all(token: string, owner: string): Promise<any[]> {
    const out: any[] = [];
    let next: string | null = null;
    do {
      const res: { status: number; body: any } = await http("GET", `/v1/notifications?owner=${owner}&limit=100${next ? `&next=${next}` : ""}`, { url, token });
      expect(res.status).toBe(200);
      out.push(...res.body.results);
      next = res.body.next;
    } while (next);
    return out;
  }

  it("SIGKILLed while follows, reactions and comments stream in: after its restart every notification and every webhook event record exists exactly once", { timeout: 180_000 }, async () => {
    const { id, token } = await tenant();
    const owners = ["t0", "t1", "t2"];
    // The tenant has a destination (nobody listens there: records are what counts here).
    const dest = await http("POST", "/v1/webhooks", { url, token, body: { url: "http://127.0.0.1:9/hook", events: ["follow.created", "reaction.added", "comment.added"] } });
    expect(dest.status).toBe(201);
    const activities = new Map<string, string>();
    for (const owner of owners) {
      const post = await http("POST", `/v1/feeds/user/${owner}/activities`, { url, token, body: { actor: `user:${owner}`, verb: "post", object: "note:1" } });
      expect(post.status).toBe(201);
      activities.set(owner, post.body.id as string);
    }
    const expected = new Map(owners.map((o) => [o, [] as string[]]));
    const stored = () => mongo.db(namespace).collection("notifications").countDocuments({ tenant_id: id });
    const notification = system.processes.find((p) => p.name === "notification") as RunningProcess;
    expect(notification).toBeDefined();

    // A follow, a reaction or a comment, each through the gateway (graph and engagement live on).
    const act = async (i: number) => {
      const owner = owners[i % owners.length] as string;
      const activity = activities.get(owner) as string;
      const res =
        i % 3 === 0
          ? await http("POST", `/v1/feeds/timeline/f${i}/follows`, { url, token, body: { target: `user:${owner}`, activity_copy_limit: 0 } })
          : i % 3 === 1
            ? await http("POST", `/v1/activities/${activity}/reactions`, { url, token, body: { kind: "like", user_id: `a${i}` } })
            : await http("POST", `/v1/activities/${activity}/comments`, { url, token, body: { text: "hi", user_id: `a${i}` } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expected.get(owner)?.push(i % 3 === 0 ? `user:f${i}` : `user:a${i}`);
    };

    let n = 0;
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        await Promise.all(Array.from({ length: 6 }, () => act(n++)));
        await sleep(20);
      }
    })();
    try {
      // Kill it in the middle of its work, keep the acts coming while it is gone, then start it again.
      await until("some notifications written", async () => ((await stored()) >= 20 ? true : undefined), 60_000);
      await notification.kill();
      const atKill = n;
      // Readiness names the dead service and the two workers that ran in it (their beats stop).
      const down = await until(
        "readiness naming the notification workers",
        async () => {
          const r = await http("GET", "/v1/health/ready", { url });
          const failing = (r.body.checks as { name: string; ok: boolean }[]).filter((c) => !c.ok).map((c) => c.name);
          // Each worker's beats stop on their own clock: wait for both, then check nothing else fails.
          return r.status === 503 && failing.includes("worker:notify") && failing.includes("worker:webhooks") ? failing : undefined;
        },
        20_000,
      );
      expect(down.sort()).toEqual(["notification", "worker:notify", "worker:webhooks"]);
      await until("acts while it is down", async () => (n >= atKill + 60 ? true : undefined), 60_000);
      await notification.restart();
      await until("readiness after the restart", async () => ((await http("GET", "/v1/health/ready", { url })).status === 200 ? true : undefined), 20_000);
    } finally {
      streaming = false;
      await stream;
    }
    const total = n;
    expect(total).toBeGreaterThan(100);

    // Events handed to the dead process come back after their ack wait (30 s).
    await until("every notification", async () => ((await stored()) >= total ? true : undefined), 90_000).catch(() => undefined);
    await queueDrained("notify", { url, timeoutMs: 60_000 });
    for (const owner of owners) {
      const got = await all(token, owner);
      const actors = got.map((x) => x.actor);
      expect(actors.length, owner).toBe(new Set(actors).size); // none twice
      expect(new Set(actors), owner).toEqual(new Set(expected.get(owner)));
      // Its counts, in the list and in the signal (whose writers may have died mid-change), are exact.
      const list = await http("GET", `/v1/notifications?owner=${owner}`, { url, token });
      expect(list.body).toMatchObject({ unseen: actors.length, unread: actors.length });
      const signal = await until(
        "the signal to catch up",
        async () => {
          const s = await http("GET", `/v1/notifications/signal?owner=${owner}`, { url, token });
          return s.body.unseen === actors.length ? s : undefined;
        },
        15_000,
      );
      expect(signal.body).toMatchObject({ unseen: actors.length, unread: actors.length });
    }
    expect(await stored()).toBe(total);
    // One webhook event record per act: every event recorded, none twice.
    const records = await mongo.db(namespace).collection("webhook_events").find({ tenant_id: id }).toArray();
    expect(records).toHaveLength(total);
    expect(new Set(records.map((r) => r.event_id)).size).toBe(total);
    expect(records.map((r) => r.event_type).sort()).toEqual(
      Array.from({ length: total }, (_, i) => ["follow.created", "reaction.added", "comment.added"][i % 3]).sort(),
    );
  });
  it("with NATS down, follows, unfollows and marks still answer; the notifications arrive once NATS is back, also for a follow unfollowed meanwhile", { timeout: 120_000 }, async () => {
    const { token } = await tenant();
    const follow = (source: string) => http("POST", `/v1/feeds/${source.replace(":", "/")}/follows`, { url, token, body: { target: "user:alice", activity_copy_limit: 0 } });
    await privateNats.stop();
    try {
      expect((await follow("timeline:x")).status).toBe(201);
      expect((await follow("timeline:y")).status).toBe(201);
      // Gone again before NATS returns: the follow did happen, and its writer said so.
      expect((await http("DELETE", "/v1/feeds/timeline/y/follows/user/alice", { url, token })).status).toBe(204);
      // A mark is a write too: made and answered, its live counts event left to the relay.
      const marked = await http("POST", "/v1/notifications/mark", { url, token, body: { seen: true, owner: "alice" } });
      expect(marked.status, JSON.stringify(marked.body)).toBe(200);
    } finally {
      await privateNats.start();
    }
    await until(
      "both notifications",
      async () => {
        const ns = await all(token, "alice");
        return ns.length >= 2 ? ns : undefined;
      },
      60_000,
    );
    await queueDrained("notify", { url });
    expect((await all(token, "alice")).map((n) => n.actor).sort()).toEqual(["user:x", "user:y"]);
  });
});
