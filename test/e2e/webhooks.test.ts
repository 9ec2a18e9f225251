import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { OperatorClient, ServerClient } from "@feeds/node";
import { baseUrl, envelope, http, newIp, newOperator, newTenant, staffToken, type TestTenant, queueDrained } from "../support/api.js";
import { until } from "../support/until.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

// Webhooks on the shared system (WEBHOOK_ALLOW_PRIVATE=1, so a receiver on loopback is allowed;
// the default attempt limit of 5 s). Every delivery is verified with the standardwebhooks package.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let receiver: Receiver;
let seq = 0;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

/** Registers a destination at a fresh receiver path; the receiver learns its secret. */
async function register(t: TestTenant, opts: { events?: string[]; path?: string } = {}) {
  const path = opts.path ?? `/hook-${++seq}`;
  const res = await http("POST", "/v1/webhooks", {
    token: await t.server(),
    body: { url: receiver.url(path), ...(opts.events ? { events: opts.events } : {}) },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.secret(path, res.body.signing_secret);
  return { id: res.body.destination.id as string, path, secret: res.body.signing_secret as string, body: res.body };
}

/** Delivered (2xx, verified) events of a path, by type. */
const eventsAt = (path: string, type?: string) => receiver.delivered(path).map((r) => r.event).filter((e) => !type || e.type === type);

async function operatorOf(t: TestTenant) {
  return (await newOperator(t.id, "member")).token;
}

async function eventLog(token: string, query = "") {
  const res = await http("GET", `/operator/webhooks/events${query}`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { results: any[]; next: string | null };
}

describe("webhook destinations", () => {
  it("register answers the destination and a whsec_ secret once; lists never show the secret", async () => {
    const t = await newTenant();
    const server = await t.server();
    const a = await register(t);
    expect(a.body.destination).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), url: receiver.url(a.path), events: null, created_at: expect.any(String) });
    expect(a.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(a.secret.slice("whsec_".length), "base64").length).toBeGreaterThanOrEqual(24);
    const b = await register(t, { events: ["activity.added", "activity.added", "user.updated"] });
    expect(b.body.destination.events).toEqual(["activity.added", "user.updated"]);

    const list = await http("GET", "/v1/webhooks", { token: server });
    expect(list.status).toBe(200);
    expect(list.body.results.map((d: any) => d.id)).toEqual([a.id, b.id]);
    expect(list.body.next).toBeNull();
    const paged = await http("GET", "/v1/webhooks?limit=1", { token: server });
    expect(paged.body.results.map((d: any) => d.id)).toEqual([a.id]);
    const second = await http("GET", `/v1/webhooks?limit=1&next=${paged.body.next}`, { token: server });
    expect(second.body.results.map((d: any) => d.id)).toEqual([b.id]);

    const op = await operatorOf(t);
    const view = await http("GET", "/operator/webhooks/destinations", { token: op });
    expect(view.status).toBe(200);
    expect(view.body.results).toEqual(list.body.results);
    for (const body of [JSON.stringify(list.body), JSON.stringify(view.body)]) {
      expect(body).not.toContain(a.secret);
      expect(body).not.toContain(b.secret);
      expect(body).not.toContain("whsec_");
    }
  });

  it("the signing secret is stored sealed: the stored document holds it in no field, and deliveries verify with the shown one", async () => {
    const t = await newTenant();
    const d = await register(t);
    const mongo = new MongoClient(inject("mongoUrl"));
    try {
      const stored = await mongo.db(inject("namespace")).collection<{ _id: string; tenant_id: string }>("webhook_destinations").findOne({ _id: d.id });
      expect(stored?.tenant_id).toBe(t.id);
      // As shown, its base64 body, and its bytes in hex: none in any field.
      const body = d.secret.slice("whsec_".length);
      const text = JSON.stringify(stored);
      for (const form of [d.secret, body, Buffer.from(body, "base64").toString("hex")]) expect(text).not.toContain(form);
    } finally {
      await mongo.close();
    }
    const op = await operatorOf(t);
    expect((await http("POST", "/operator/webhooks/test", { token: op })).status).toBe(202);
    // The receiver verifies each request with the secret the registration answered.
    const [delivered] = await receiver.waitFor("the test event, verified", () => receiver.delivered(d.path).length === 1 && receiver.delivered(d.path));
    expect(delivered?.event.type).toBe("webhook.test");
  });

  it("server tokens only; operators only read; bad URLs, event types and ids are refused", async () => {
    const t = await newTenant();
    const server = await t.server();
    const user = await t.user("u1");
    expect((await http("GET", "/v1/webhooks", { token: user })).status).toBe(403);
    expect((await http("POST", "/v1/webhooks", { token: user, body: { url: receiver.url("/x") } })).status).toBe(403);
    expect((await http("DELETE", "/v1/webhooks/00000000-0000-4000-8000-000000000000", { token: user })).status).toBe(403);
    expect((await http("GET", "/operator/webhooks/destinations", { token: await staffToken() })).status).toBe(403);
    expect((await http("GET", "/operator/webhooks/destinations", { token: server })).status).toBe(401);

    for (const [body, path] of [
      [{ url: "ftp://example.com/hook" }, "url"],
      [{ url: "not a url" }, "url"],
      [{ url: "http://user:pw@example.com/" }, "url"],
      [{ url: "x".repeat(3000) }, "url"],
      [{}, "url"],
      [{ url: receiver.url("/x"), events: ["activity.nope"] }, "events.0"],
      [{ url: receiver.url("/x"), events: [] }, "events"],
    ] as const) {
      const res = await http("POST", "/v1/webhooks", { token: server, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const e = envelope(res);
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.fields?.map((f) => f.path)).toContain(path);
    }
    expect((await http("DELETE", "/v1/webhooks/not-a-uuid", { token: server })).status).toBe(404);
    expect((await http("DELETE", "/v1/webhooks/00000000-0000-4000-8000-000000000000", { token: server })).status).toBe(404);
    // Another tenant's destination is not found either.
    const other = await register(await newTenant());
    expect((await http("DELETE", `/v1/webhooks/${other.id}`, { token: server })).status).toBe(404);
  });
});

describe("the SDK's webhook methods", () => {
  it("createWebhook, listWebhooks, deleteWebhook; webhookDestinations, sendTestWebhook, webhookEvents", async () => {
    const t = await newTenant();
    const server = new ServerClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret, validateResponses: true });
    const op = new OperatorClient({ baseUrl: baseUrl(), headers: { "x-forwarded-for": newIp() }, token: await operatorOf(t), validateResponses: true });
    const created = await server.createWebhook({ url: receiver.url("/sdk"), events: ["webhook.test"] });
    receiver.secret("/sdk", created.signing_secret);
    expect(created.destination.events).toEqual(["webhook.test"]);
    expect((await server.listWebhooks()).results).toEqual([created.destination]);
    expect((await op.webhookDestinations()).results).toEqual([created.destination]);
    expect(await op.sendTestWebhook()).toEqual({ published: 1 });
    await receiver.waitFor("the test event", () => receiver.delivered("/sdk").length === 1);
    const log = await op.webhookEvents({ limit: 5 });
    expect(log.results.map((r) => [r.event_type, r.destination_id])).toEqual([["webhook.test", created.destination.id]]);
    await server.deleteWebhook(created.destination.id);
    expect((await server.listWebhooks()).results).toEqual([]);
  });
});

describe("webhook delivery", () => {
  it("every event type this branch produces arrives signed per Standard Webhooks, with the Activity as data", async () => {
    const t = await newTenant();
    const server = await t.server();
    const d = await register(t);
    expect((await http("PUT", "/v1/users/alice", { token: server, body: { custom: { name: "Alice" } } })).status).toBe(201);
    const added = await http("POST", "/v1/feeds/user/alice/activities", {
      token: server,
      body: { actor: "user:alice", verb: "post", object: "note:1", custom: { n: 1 } },
    });
    expect(added.status).toBe(201);
    const id = added.body.id as string;
    const asRead = (await http("GET", `/v1/activities/${id}`, { token: server })).body;
    const patched = await http("PATCH", `/v1/activities/${id}`, { token: server, body: { set: { "custom.n": 2 } } });
    expect(patched.status).toBe(200);
    expect((await http("DELETE", `/v1/activities/${id}`, { token: server })).status).toBe(204);
    const test = await http("POST", "/operator/webhooks/test", { token: await operatorOf(t) });
    expect(test.status).toBe(202);
    expect(test.body).toEqual({ published: 1 });

    const types = ["user.updated", "activity.added", "activity.updated", "activity.deleted", "webhook.test"];
    await receiver.waitFor("one of each event type", () => types.every((ty) => eventsAt(d.path, ty).length === 1));
    const requests = receiver.requests.filter((r) => r.path === d.path);
    // Every request verified (a failed verification leaves event null) and was answered once.
    expect(requests.map((r) => r.event === null)).toEqual(requests.map(() => false));
    for (const r of requests) {
      expect(Object.keys(r.event).sort()).toEqual(["created_at", "data", "id", "tenant_id", "type"]);
      expect(r.headers["webhook-id"]).toBe(r.event.id);
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.event.tenant_id).toBe(t.id);
      expect(Math.abs(Number(r.headers["webhook-timestamp"]) * 1000 - r.at)).toBeLessThan(10_000);
    }
    const [ev] = eventsAt(d.path, "activity.added");
    expect(ev.data).toEqual(asRead);
    expect(ev.data.actor_user).toEqual({ id: "alice", custom: { name: "Alice" } });
    const [upd] = eventsAt(d.path, "activity.updated");
    expect(upd.data).toEqual(patched.body);
    expect(upd.data.custom).toEqual({ n: 2 });
    const [del] = eventsAt(d.path, "activity.deleted");
    expect(del.data).toMatchObject({ id, version: patched.body.version + 1, deleted_at: expect.any(String) });
    expect(del.created_at).toBe(del.data.deleted_at);
    const [user] = eventsAt(d.path, "user.updated");
    expect(user.data).toEqual({ id: "alice", custom: { name: "Alice" }, created_at: expect.any(String), updated_at: expect.any(String) });
    expect(eventsAt(d.path, "webhook.test")[0].data).toEqual({ message: expect.any(String) });
    // Each of the five events was published (delivered on its first attempt) and recorded.
    const log = await eventLog(await operatorOf(t), "?limit=100");
    expect(log.results.map((r) => r.event_type).sort()).toEqual([...types].sort());
    expect(log.results.every((r) => r.status === "published" && r.attempts === 1 && r.destination_id === d.id)).toBe(true);
  });

  it("the events filter: a destination gets only the types it named", async () => {
    const t = await newTenant();
    const server = await t.server();
    const all = await register(t);
    const onlyDeleted = await register(t, { events: ["activity.deleted"] });
    const added = await http("POST", "/v1/feeds/user/bob/activities", { token: server, body: { actor: "user:bob", verb: "post", object: "x" } });
    expect((await http("DELETE", `/v1/activities/${added.body.id}`, { token: server })).status).toBe(204);
    await receiver.waitFor("both events at the catch-all", () => eventsAt(all.path).length === 2);
    await receiver.waitFor("the deletion at the filtered one", () => eventsAt(onlyDeleted.path).length === 1);
    await sleep(500);
    expect(eventsAt(onlyDeleted.path).map((e) => e.type)).toEqual(["activity.deleted"]);
    expect(eventsAt(all.path).map((e) => e.type).sort()).toEqual(["activity.added", "activity.deleted"]);
  });

  it("a deleted destination gets nothing more; the test route counts the destinations it sent to", async () => {
    const t = await newTenant();
    const server = await t.server();
    const op = await operatorOf(t);
    const kept = await register(t);
    const gone = await register(t);
    expect((await http("POST", "/operator/webhooks/test", { token: op })).body).toEqual({ published: 2 });
    await receiver.waitFor("the test at both", () => eventsAt(kept.path).length === 1 && eventsAt(gone.path).length === 1);
    expect((await http("DELETE", `/v1/webhooks/${gone.id}`, { token: server })).status).toBe(204);
    expect((await http("DELETE", `/v1/webhooks/${gone.id}`, { token: server })).status).toBe(404);
    expect((await http("GET", "/v1/webhooks", { token: server })).body.results.map((d: any) => d.id)).toEqual([kept.id]);
    expect((await http("POST", "/operator/webhooks/test", { token: op })).body).toEqual({ published: 1 });
    await http("POST", "/v1/feeds/user/carol/activities", { token: server, body: { actor: "user:carol", verb: "post", object: "y" } });
    await receiver.waitFor("two tests and the activity at the kept one", () => eventsAt(kept.path).length === 3);
    await sleep(500);
    expect(receiver.requests.filter((r) => r.path === gone.path)).toHaveLength(1);
  });

  it("a tenant without destinations records nothing and sees an empty log; the test route answers 0", async () => {
    const t = await newTenant();
    const server = await t.server();
    const op = await operatorOf(t);
    await http("POST", "/v1/feeds/user/dan/activities", { token: server, body: { actor: "user:dan", verb: "post", object: "z" } });
    await http("PUT", "/v1/users/dan", { token: server, body: { custom: {} } });
    const test = await http("POST", "/operator/webhooks/test", { token: op });
    expect(test.status).toBe(202);
    expect(test.body).toEqual({ published: 0 });
    await sleep(1500);
    expect(await eventLog(op)).toEqual({ results: [], next: null });
    expect((await http("GET", "/operator/webhooks/events", { token: await staffToken() })).status).toBe(403);
  });

  it("the event log pages newest first by (created_at, id) without loss or repeats", async () => {
    const t = await newTenant();
    const server = await t.server();
    const op = await operatorOf(t);
    const a = await register(t);
    const b = await register(t);
    for (let i = 0; i < 4; i++) {
      await http("POST", "/v1/feeds/user/erin/activities", { token: server, body: { actor: "user:erin", verb: "post", object: `o${i}` } });
    }
    await receiver.waitFor("eight deliveries", () => eventsAt(a.path).length === 4 && eventsAt(b.path).length === 4);
    const full = await eventLog(op, "?limit=100");
    expect(full.results).toHaveLength(8);
    const order = [...full.results].sort((x, y) => (x.created_at === y.created_at ? (x.id < y.id ? 1 : -1) : x.created_at < y.created_at ? 1 : -1));
    expect(full.results).toEqual(order);
    expect(full.results[0]).toEqual({
      id: expect.any(String),
      event_id: expect.any(String),
      event_type: "activity.added",
      destination_id: expect.any(String),
      status: "published",
      attempts: 1,
      created_at: expect.any(String),
    });
    const paged: any[] = [];
    let next: string | null = null;
    do {
      const page: { results: any[]; next: string | null } = await eventLog(op, `?limit=3${next ? `&next=${next}` : ""}`);
      expect(page.results.length).toBeLessThanOrEqual(3);
      paged.push(...page.results);
      next = page.next;
    } while (next);
    expect(paged).toEqual(full.results);
    // `cursor` is the deprecated alias; bad limits and cursors are 400.
    const first = await eventLog(op, "?limit=3");
    expect((await eventLog(op, `?limit=3&cursor=${first.next}`)).results).toEqual(full.results.slice(3, 6));
    for (const q of ["?limit=0", "?limit=101", "?next=%%%", "?next=bm90LWEtY3Vyc29y"]) {
      const res = await http("GET", `/operator/webhooks/events${q}`, { token: op });
      expect(res.status, q).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
  });

  it("batch imports of activities, follows and users publish nothing", async () => {
    const t = await newTenant();
    const server = await t.server();
    const op = await operatorOf(t);
    const d = await register(t);
    const batchActivities = await http("POST", "/v1/batch/activities", {
      token: server,
      body: { activities: [{ feed: "user:fay", activity: { actor: "user:fay", verb: "post", object: "b1" } }] },
    });
    expect(batchActivities.body.results[0].ok).toBe(true);
    const batchFollows = await http("POST", "/v1/batch/follows", { token: server, body: { follows: [{ source: "timeline:gus", target: "user:fay" }] } });
    expect(batchFollows.body.results[0].ok).toBe(true);
    const batchUsers = await http("POST", "/v1/batch/users", { token: server, body: { users: [{ id: "fay", custom: {} }] } });
    expect(batchUsers.body.results[0].ok).toBe(true);
    // The batch activity's fan-out task (where activity.added is published) has run once the
    // fan-out queue is empty; a test event published after it marks the end.
    await queueDrained("fanout", { timeoutMs: 10_000 });
    expect((await http("POST", "/operator/webhooks/test", { token: op })).body).toEqual({ published: 1 });
    await receiver.waitFor("the marker", () => eventsAt(d.path, "webhook.test").length === 1);
    await sleep(500);
    expect(receiver.requests.filter((r) => r.path === d.path).map((r) => r.event?.type)).toEqual(["webhook.test"]);
    expect((await eventLog(op)).results.map((r) => r.event_type)).toEqual(["webhook.test"]);
  });
});

describe("slow and dead destinations", () => {
  it("a receiver that never answers is cut off at the attempt limit; other destinations and tenants get their events on time", async () => {
    const t = await newTenant();
    const server = await t.server();
    const op = await operatorOf(t);
    const dead = await register(t);
    receiver.behave(dead.path, () => "hang");
    const live = await register(t);
    const other = await newTenant();
    const otherLive = await register(other);

    // A burst bigger than the dead destination's share of in-flight attempts.
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) {
      const r = await http("POST", "/v1/feeds/user/hal/activities", { token: server, body: { actor: "user:hal", verb: "post", object: `n${i}` } });
      ids.push(r.body.id);
    }
    const otherPost = await http("POST", "/v1/feeds/user/ivy/activities", { token: await other.server(), body: { actor: "user:ivy", verb: "post", object: "o" } });
    const lastWrite = Date.now();
    await receiver.waitFor("every event at the live destination", () => eventsAt(live.path).length === 24, 15_000);
    await receiver.waitFor("the other tenant's event", () => eventsAt(otherLive.path).length === 1, 15_000);
    const lastLive = Math.max(...receiver.delivered(live.path).map((r) => r.at), ...receiver.delivered(otherLive.path).map((r) => r.at));
    // On time: well inside one attempt limit (5 s) of the last write, not behind the dead one.
    expect(lastLive - lastWrite).toBeLessThan(4_500);
    expect(eventsAt(live.path).map((e) => e.data.id).sort()).toEqual([...ids].sort());
    expect(eventsAt(otherLive.path)[0].data.id).toBe(otherPost.body.id);

    // The dead destination's attempts are cut off by the sender at the limit.
    const hung = await receiver.waitFor("a hung attempt closed by the sender", () => receiver.requests.find((r) => r.path === dead.path && r.closedAt), 15_000);
    const held = (hung.closedAt ?? 0) - hung.at;
    expect(held).toBeGreaterThanOrEqual(4_500);
    expect(held).toBeLessThan(7_000);
    // The cut-off attempt's record is written just after the sender closed it.
    const deadRecords = await until(
      "a dead destination's record with its attempt counted",
      async () => {
        const rows = (await eventLog(op, "?limit=100")).results.filter((r) => r.destination_id === dead.id);
        return rows.some((r) => r.attempts >= 1) ? rows : undefined;
      },
      5_000,
    );
    expect(deadRecords).toHaveLength(24);
    expect(deadRecords.every((r) => r.status === "pending")).toBe(true);
  });

  it("a tenant has at most 64 deliveries in flight in the worker: every one of its events arrives, each in one attempt, and another tenant's meanwhile at once", async () => {
    const SLOW_MS = 1500;
    const EVENTS = 8;
    const t = await newTenant();
    const server = await t.server();
    const op = await operatorOf(t);
    // 20 destinations (the most a tenant may have) at a receiver that takes 1.5 s to answer: 16
    // slots each would let 160 deliveries of 8 events be open there at once.
    const prefix = `/capped-${++seq}-`;
    const peak = receiver.track(prefix);
    const slow: { id: string; path: string }[] = [];
    for (let i = 0; i < 20; i++) {
      const d = await register(t, { path: `${prefix}${i}` });
      receiver.behave(d.path, () => ({ status: 200, delayMs: SLOW_MS }));
      slow.push(d);
    }
    const other = await newTenant();
    const otherHook = await register(other);

    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const r = await http("POST", "/v1/feeds/user/kim/activities", { token: server, body: { actor: "user:kim", verb: "post", object: `c${i}` } });
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    // The capped tenant's deliveries are under way (the cap reached) when the other tenant posts.
    await receiver.waitFor("the capped tenant at its cap", () => peak() >= 64, 15_000);
    const posted = Date.now();
    const otherPost = await http("POST", "/v1/feeds/user/lou/activities", { token: await other.server(), body: { actor: "user:lou", verb: "post", object: "o" } });
    const [otherDelivery] = await receiver.waitFor("the other tenant's event", () => receiver.delivered(otherHook.path).length === 1 && receiver.delivered(otherHook.path), 15_000);
    expect(otherDelivery?.event.data.id).toBe(otherPost.body.id);
    // Well inside one of the slow answers, not behind the capped tenant's backlog.
    expect(otherDelivery!.at - posted).toBeLessThan(SLOW_MS);

    await receiver.waitFor("every event at every slow destination", () => slow.every((d) => eventsAt(d.path).length >= EVENTS), 30_000);
    for (const d of slow) expect(eventsAt(d.path).map((e) => e.data.id).sort(), d.path).toEqual([...ids].sort());
    expect(peak()).toBe(64);
    // At the cap's pace: three rounds of 64 slow answers and the waits of the tasks sent back
    // meanwhile (a task sent back that came straight back, as on a fractional nak delay, takes
    // several times longer).
    const arrivals = receiver.requests.filter((r) => r.path.startsWith(prefix)).map((r) => r.at);
    expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeLessThan(6 * SLOW_MS);
    // Tasks held back by the cap counted no attempt: every record published at its first.
    const records = await until(
      "every record published",
      async () => {
        const all: any[] = [];
        let next: string | null = null;
        do {
          const page: { results: any[]; next: string | null } = await eventLog(op, `?limit=100${next ? `&next=${next}` : ""}`);
          all.push(...page.results);
          next = page.next;
        } while (next);
        return all.length === EVENTS * slow.length && all.every((r) => r.status === "published") ? all : undefined;
      },
      15_000,
    );
    expect(new Set(records.map((r) => r.attempts))).toEqual(new Set([1]));
  });
});
