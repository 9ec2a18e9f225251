import { randomBytes } from "node:crypto";
import { connect } from "nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { startPrivateNats, type PrivateServer } from "../../scripts/infra.mjs";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newIp } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

// Retries, dead letters, redirects and the outbox, on a system of its own: a private NATS (so the
// test may stop it), loopback receivers allowed, a short attempt limit and retry schedule (the
// module takes them from WEBHOOK_ATTEMPT_TIMEOUT_MS and WEBHOOK_RETRY_SCHEDULE_MS).

const SCHEDULE = [400, 800, 1600, 1600];
const MAX_ATTEMPTS = SCHEDULE.length + 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("webhook retries, dead letters and the outbox", () => {
  let nats: PrivateServer;
  let system: RunningSystem;
  let receiver: Receiver;
  let url = "";
  let infra: Awaited<ReturnType<typeof testInfra>>;
  const namespace = newNamespace("webhooks");
  const staff = { email: "staff@webhooks.test", password: randomBytes(12).toString("base64url") };
  let seq = 0;

  beforeAll(async () => {
    infra = await testInfra();
    nats = await startPrivateNats();
    receiver = await startReceiver();
    system = await startSystem({
      env: {
        MONGO_URL: infra.mongoUrl,
        NATS_URL: nats.url,
        REDIS_URL: infra.redisUrl,
        FEEDS_NAMESPACE: namespace,
        FEEDS_MASTER_KEY: infra.env.FEEDS_MASTER_KEY,
        BUILD_VERSION: inject("buildVersion"),
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "fatal",
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_ATTEMPT_TIMEOUT_MS: "1000",
        WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE.join(","),
      },
    });
    url = system.url;
  });

  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
    if (nats && !nats.running) await nats.start();
    if (nats && infra) await dropNamespace(namespace, { mongoUrl: infra.mongoUrl, natsUrl: nats.url, redisUrl: infra.redisUrl });
    await nats?.stop();
  });

  async function tenant() {
    const login = await http("POST", "/operator/login", { url, ip: newIp(), body: staff });
    const created = await http("POST", "/admin/tenants", { url, token: login.body.token, body: { name: `wh-${randomBytes(3).toString("hex")}` } });
    expect(created.status).toBe(201);
    const tenantId = created.body.tenant.id as string;
    const invite = await http("POST", `/admin/tenants/${tenantId}/operators`, {
      url,
      token: login.body.token,
      body: { email: `op-${randomBytes(4).toString("hex")}@webhooks.test`, name: "op", role: "member" },
    });
    const accepted = await http("POST", "/operator/invite/accept", { url, ip: newIp(), body: { token: invite.body.invite_token, password: "a long enough password" } });
    return {
      server: await createServerToken(created.body.tenant.api_key, created.body.api_secret),
      operator: accepted.body.token as string,
    };
  }

  async function register(server: string) {
    const path = `/d-${++seq}`;
    const res = await http("POST", "/v1/webhooks", { url, token: server, body: { url: receiver.url(path) } });
    expect(res.status).toBe(201);
    receiver.secret(path, res.body.signing_secret);
    return { id: res.body.destination.id as string, path };
  }

  const records = async (operator: string) => (await http("GET", "/operator/webhooks/events?limit=100", { url, token: operator })).body.results as any[];
  const requestsTo = (path: string) => receiver.requests.filter((r) => r.path === path);

  it("a receiver that fails three times then succeeds gets the event once, after growing waits; the record shows 4 attempts", async () => {
    const t = await tenant();
    const d = await register(t.server);
    receiver.behave(d.path, (n) => (n <= 3 ? 500 : 200));
    expect((await http("POST", "/operator/webhooks/test", { url, token: t.operator })).body).toEqual({ published: 1 });
    await receiver.waitFor("the fourth attempt", () => requestsTo(d.path).length === 4);
    const tries = requestsTo(d.path);
    // The same event, signed afresh each time, verified every time; answered 2xx once.
    expect(new Set(tries.map((r) => r.event?.id)).size).toBe(1);
    expect(tries.every((r) => r.event !== null && r.headers["webhook-id"] === r.event.id)).toBe(true);
    expect(receiver.delivered(d.path)).toHaveLength(1);
    const gaps = tries.slice(1).map((r, i) => r.at - (tries[i]?.at ?? 0));
    // Waits of 400, 800, 1600 ms with ±25% jitter: each longer than the one before.
    expect(gaps[0]).toBeGreaterThanOrEqual(300);
    expect(gaps[1]).toBeGreaterThan(gaps[0] ?? 0);
    expect(gaps[2]).toBeGreaterThan(gaps[1] ?? 0);
    const [rec] = await receiverRecords(t.operator, 1, (r) => r.status === "published");
    expect(rec).toMatchObject({ event_type: "webhook.test", status: "published", attempts: 4, destination_id: d.id });
    await sleep(SCHEDULE[0] ?? 0);
    expect(requestsTo(d.path)).toHaveLength(4);
  });

  async function receiverRecords(operator: string, n: number, done: (r: any) => boolean) {
    for (let i = 0; i < 100; i++) {
      const rs = await records(operator);
      if (rs.length === n && rs.every(done)) return rs;
      await sleep(200);
    }
    return records(operator);
  }

  it("a receiver that always fails is tried the schedule's attempts, then the record is failed and the task dead-lettered", async () => {
    const t = await tenant();
    const d = await register(t.server);
    receiver.behave(d.path, () => 503);
    const dlqBefore = await dlqDepth();
    await http("POST", "/operator/webhooks/test", { url, token: t.operator });
    const [rec] = await receiverRecords(t.operator, 1, (r) => r.status === "failed");
    expect(rec).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS });
    expect(requestsTo(d.path)).toHaveLength(MAX_ATTEMPTS);
    expect(await dlqDepth()).toBe(dlqBefore + 1);
  });

  it("redirects are never followed: a 3xx is a failed attempt", async () => {
    const t = await tenant();
    const d = await register(t.server);
    receiver.behave(d.path, () => ({ status: 307, headers: { location: receiver.url("/redirected") } }));
    await http("POST", "/operator/webhooks/test", { url, token: t.operator });
    const [rec] = await receiverRecords(t.operator, 1, (r) => r.status === "failed");
    expect(rec).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS });
    expect(requestsTo("/redirected")).toHaveLength(0);
  });

  async function dlqDepth(): Promise<number> {
    const nc = await connect({ servers: nats.url });
    try {
      const jsm = await nc.jetstreamManager();
      return (await jsm.streams.info(`${namespace}_webhooks_dlq`)).state.messages;
    } finally {
      await nc.close();
    }
  }

  it("writes made while NATS is down publish their events once it returns (outboxes)", async () => {
    const t = await tenant();
    const d = await register(t.server);
    const before = await http("POST", "/v1/feeds/user/kim/activities", { url, token: t.server, body: { actor: "user:kim", verb: "post", object: "a" } });
    expect(before.status).toBe(201);
    await receiver.waitFor("the first activity.added", () => receiver.delivered(d.path).length === 1);

    let keptId = "";
    await nats.stop();
    try {
      const patched = await http("PATCH", `/v1/activities/${before.body.id}`, { url, token: t.server, body: { set: { "custom.x": 1 } } });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      const added = await http("POST", "/v1/feeds/user/kim/activities", { url, token: t.server, body: { actor: "user:kim", verb: "post", object: "b" } });
      expect(added.status).toBe(201);
      expect((await http("DELETE", `/v1/activities/${added.body.id}`, { url, token: t.server })).status).toBe(204);
      expect((await http("PUT", "/v1/users/kim", { url, token: t.server, body: { custom: { v: 1 } } })).status).toBe(201);
      const kept = await http("POST", "/v1/feeds/user/kim/activities", { url, token: t.server, body: { actor: "user:kim", verb: "post", object: "c" } });
      expect(kept.status).toBe(201);
      keptId = kept.body.id;
      await sleep(1000);
      expect(receiver.delivered(d.path)).toHaveLength(1);
    } finally {
      await nats.start();
    }

    const types = ["activity.updated", "activity.deleted", "user.updated", "activity.added"];
    const arrived = (ty: string) => receiver.delivered(d.path).filter((r) => r.event.type === ty).length;
    await receiver.waitFor("the events of the writes made while NATS was down", () => types.every((ty) => arrived(ty) === (ty === "activity.added" ? 2 : 1)), 45_000);
    const events = receiver.delivered(d.path).map((r) => r.event);
    expect(events.find((e) => e.type === "activity.updated").data).toMatchObject({ id: before.body.id, custom: { x: 1 }, version: 2 });
    expect(events.find((e) => e.type === "user.updated").data).toMatchObject({ id: "kim", custom: { v: 1 } });
    await sleep(1000);
    const counts = Object.fromEntries(types.map((ty) => [ty, receiver.delivered(d.path).filter((r) => r.event.type === ty).length]));
    // Each exactly once; the activity deleted before its fan-out ran publishes no activity.added.
    expect(counts).toEqual({ "activity.updated": 1, "activity.deleted": 1, "user.updated": 1, "activity.added": 2 });
    expect(events.filter((e) => e.type === "activity.added").map((e) => e.data.id)).toEqual([before.body.id, keptId]);
  });
});
