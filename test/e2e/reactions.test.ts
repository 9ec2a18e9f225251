import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { RunningSystem } from "../../scripts/lib/system.mjs";
import { envelope, http, react, tenantWithActivity } from "../support/api.js";
import { startReplica } from "../support/replica.js";
import { until } from "../support/until.js";

// Reactions through the gateway: one per user and kind, exact reaction_counts and version under
// concurrency on two replicas, removal by kind and by id, keyset lists, deleted activities,
// own_reactions on the feed read, the count update of a writer that died, and the events.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const unreact = (token: string, activityId: string, kind: string, query = "", url?: string) =>
  http("DELETE", `/v1/activities/${activityId}/reactions/${kind}${query}`, { token, url });
const activityOf = async (token: string, id: string, url?: string) => (await http("GET", `/v1/activities/${id}`, { token, url })).body;

/** Every reaction of an activity, following `next` with pages of `limit`. */
async function listAll(token: string, activityId: string, limit: number, kind?: string): Promise<any[]> {
  const out: any[] = [];
  let next: string | null = null;
  do {
    const q: string = `?limit=${limit}${kind ? `&kind=${kind}` : ""}${next ? `&next=${encodeURIComponent(next)}` : ""}`;
    const res = await http("GET", `/v1/activities/${activityId}/reactions${q}`, { token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results.length).toBeLessThanOrEqual(limit);
    out.push(...res.body.results);
    next = res.body.next;
  } while (next);
  return out;
}

describe("reactions", () => {
  let second: RunningSystem;
  let nc: NatsConnection;
  const events: any[] = [];

  beforeAll(async () => {
    // Every event on the notify subject, as a plain subscriber sees it (the notify worker still
    // consumes the work queue).
    nc = await connect({ servers: inject("natsUrl") });
    const sub = nc.subscribe(`${inject("namespace")}.notify.event`);
    void (async () => {
      for await (const m of sub) events.push(JSON.parse(new TextDecoder().decode(m.data)));
    })();
    // A second replica of every service (gateway, engagement, feed, ...) on the same namespace.
    second = await startReplica();
  });
  afterAll(async () => {
    await second?.stop();
    await nc?.drain();
  });

  it("the same reaction twice: 201 then 200 with the same reaction; counts and version move once, before the answer", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const fan = await t.user("fan");
    const first = await react(fan, activity.id, { kind: "like" });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ id: expect.stringMatching(UUID), activity_id: activity.id, user_id: "fan", kind: "like", created_at: expect.any(String) });
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 1 }, version: 2 });
    const again = await react(fan, activity.id, { kind: "like" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    // A server token names the user; the same (user, kind) is the same reaction.
    const viaServer = await react(server, activity.id, { kind: "like", user_id: "fan" });
    expect(viaServer.status).toBe(200);
    expect(viaServer.body.id).toBe(first.body.id);
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 1 }, version: 2 });
    // Another kind is another reaction.
    const clap = await react(server, activity.id, { kind: "clap", user_id: "fan" });
    expect(clap.status).toBe(201);
    expect(clap.body.id).not.toBe(first.body.id);
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 1, clap: 1 }, version: 3 });
  });

  it("who reacts: server tokens must name user_id (400 naming it), user tokens act as themselves (another user_id: 403); kind is checked", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const missing = await react(server, activity.id, { kind: "like" });
    expect(missing.status).toBe(400);
    expect(envelope(missing)).toMatchObject({ code: "VALIDATION_FAILED", fields: [{ path: "user_id" }] });
    const fan = await t.user("fan");
    expect((await react(fan, activity.id, { kind: "like", user_id: "someone" })).status).toBe(403);
    expect((await react(fan, activity.id, { kind: "like", user_id: "fan" })).status).toBe(201);
    for (const kind of ["", "a.b", "$x", "x".repeat(65), "__proto__", "with space"]) {
      const bad = await react(fan, activity.id, { kind });
      expect(bad.status, kind).toBe(400);
      expect(envelope(bad).fields?.map((f) => f.path)).toEqual(["kind"]);
    }
    expect((await react(server, activity.id, { kind: "like", user_id: "bad id!" })).status).toBe(400);
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 1 }, version: 2 });
  });

  it("50 concurrent reactions by 50 users through two replicas leave exact reaction_counts and version; so do concurrent removals and reactions", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const tokens = await Promise.all(Array.from({ length: 60 }, (_, i) => t.user(`u${i}`)));
    // Every other call goes through the second replica (its own gateway, engagement and feed).
    const at = (i: number) => (i % 2 ? second.url : undefined);
    const added = await Promise.all(tokens.slice(0, 50).map((tok, i) => react(tok, activity.id, { kind: "like" }, at(i))));
    expect(added.map((r) => r.status)).toEqual(Array(50).fill(201));
    for (const url of [undefined, second.url]) {
      expect(await activityOf(server, activity.id, url)).toMatchObject({ reaction_counts: { like: 50 }, version: 51 });
    }
    const mixed = await Promise.all([
      ...tokens.slice(0, 20).map((tok, i) => unreact(tok, activity.id, "like", "", at(i + 1))),
      ...tokens.slice(50).map((tok, i) => react(tok, activity.id, { kind: "clap" }, at(i))),
    ]);
    expect(mixed.map((r) => r.status)).toEqual([...Array(20).fill(204), ...Array(10).fill(201)]);
    for (const url of [undefined, second.url]) {
      expect(await activityOf(server, activity.id, url)).toMatchObject({ reaction_counts: { like: 30, clap: 10 }, version: 81 });
      const feed = await http("GET", "/v1/feeds/user/owner", { token: server, url });
      expect(feed.body.results[0]).toMatchObject({ id: activity.id, reaction_counts: { like: 30, clap: 10 }, version: 81 });
    }
    expect(await listAll(server, activity.id, 100)).toHaveLength(40);
  });

  it("remove by kind: 204, then 404 when there is none; server tokens name ?user_id=", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const fan = await t.user("fan");
    await react(fan, activity.id, { kind: "like" });
    await react(server, activity.id, { kind: "like", user_id: "other" });
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 2 }, version: 3 });
    expect((await unreact(fan, activity.id, "like")).status).toBe(204);
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 1 }, version: 4 });
    const none = await unreact(fan, activity.id, "like");
    expect(none.status).toBe(404);
    expect(envelope(none).code).toBe("NOT_FOUND");
    expect((await unreact(server, activity.id, "like")).status).toBe(400);
    expect((await unreact(fan, activity.id, "like", "?user_id=other")).status).toBe(403);
    expect((await unreact(server, activity.id, "like", "?user_id=other")).status).toBe(204);
    // The last reaction of a kind takes the kind out of reaction_counts.
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: {}, version: 5 });
  });

  it("remove by id (compatibility route): user tokens only their own, server tokens any; 404 when unknown", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const [fan, other] = await Promise.all([t.user("fan"), t.user("other")]);
    const mine = (await react(fan, activity.id, { kind: "like" })).body;
    const theirs = (await react(other, activity.id, { kind: "like" })).body;
    expect((await http("DELETE", `/v1/reactions/${theirs.id}`, { token: fan })).status).toBe(403);
    expect((await http("DELETE", `/v1/reactions/${mine.id}`, { token: fan })).status).toBe(204);
    expect((await http("DELETE", `/v1/reactions/${mine.id}`, { token: fan })).status).toBe(404);
    expect((await http("DELETE", `/v1/reactions/${theirs.id}`, { token: server })).status).toBe(204);
    expect((await http("DELETE", `/v1/reactions/${randomUUID()}`, { token: server })).status).toBe(404);
    expect((await http("DELETE", "/v1/reactions/not-a-uuid", { token: server })).status).toBe(404);
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: {}, version: 5 });
    // Another tenant's reaction is not found.
    const elsewhere = await tenantWithActivity();
    const foreign = (await react(elsewhere.server, elsewhere.activity.id, { kind: "like", user_id: "fan" })).body;
    expect((await http("DELETE", `/v1/reactions/${foreign.id}`, { token: server })).status).toBe(404);
  });

  it("lists by activity and kind, newest first, in pages that join without loss or repeats", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const made: any[] = [];
    for (let i = 0; i < 13; i++) {
      made.push((await react(server, activity.id, { kind: i % 3 ? "like" : "wow", user_id: `u${i}` })).body);
    }
    // Concurrent ones too, so that some share a millisecond: ties go by id.
    made.push(...(await Promise.all(Array.from({ length: 8 }, (_, i) => react(server, activity.id, { kind: "like", user_id: `c${i}` })))).map((r) => r.body));
    const newestFirst = (list: any[]) =>
      [...list].sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? 1 : -1));
    const all = await listAll(server, activity.id, 4);
    expect(all).toEqual(newestFirst(made));
    const likes = await listAll(await t.user("reader"), activity.id, 3, "like");
    expect(likes).toEqual(newestFirst(made.filter((r) => r.kind === "like")));
    expect(new Set(likes.map((r) => r.id)).size).toBe(likes.length);
    const bad = await http("GET", `/v1/activities/${activity.id}/reactions?next=garbage!`, { token: server });
    expect(bad.status).toBe(400);
    expect((await http("GET", `/v1/activities/${activity.id}/reactions?limit=101`, { token: server })).status).toBe(400);
    expect((await http("GET", `/v1/activities/${activity.id}/reactions?kind=a.b`, { token: server })).status).toBe(400);
  });

  it("reactions on a deleted or missing activity answer 404", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const fan = await t.user("fan");
    const r = (await react(fan, activity.id, { kind: "like" })).body;
    expect((await http("DELETE", `/v1/activities/${activity.id}`, { token: server })).status).toBe(204);
    const answers = [
      await react(fan, activity.id, { kind: "clap" }),
      await react(fan, activity.id, { kind: "like" }),
      await http("GET", `/v1/activities/${activity.id}/reactions`, { token: fan }),
      await unreact(fan, activity.id, "like"),
      await http("DELETE", `/v1/reactions/${r.id}`, { token: fan }),
      await react(fan, randomUUID(), { kind: "like" }),
      await react(fan, "not-a-uuid", { kind: "like" }),
    ];
    for (const a of answers) {
      expect(a.status).toBe(404);
      expect(envelope(a).code).toBe("NOT_FOUND");
    }
  });

  it("own_reactions on the feed read and the activity read follow react and unreact at once", async () => {
    const { t, activity } = await tenantWithActivity();
    const fan = await t.user("fan");
    const own = async () => {
      const feed = await http("GET", "/v1/feeds/user/owner", { token: fan });
      const one = await activityOf(fan, activity.id);
      expect(feed.body.results[0].own_reactions).toEqual(one.own_reactions);
      return one.own_reactions;
    };
    // Read first: the cache holds "no reactions" for this user and activity.
    expect(await own()).toEqual([]);
    expect(await own()).toEqual([]);
    await react(fan, activity.id, { kind: "like" });
    expect(await own()).toEqual(["like"]);
    await react(fan, activity.id, { kind: "clap" });
    expect(await own()).toEqual(["clap", "like"]);
    expect((await unreact(fan, activity.id, "like")).status).toBe(204);
    expect(await own()).toEqual(["clap"]);
    // Through the other replica's gateway too (the cache is shared).
    expect((await unreact(fan, activity.id, "clap", "", second.url)).status).toBe(204);
    expect(await own()).toEqual([]);
  });

  it("a writer that died between the reaction write and the count update: the outbox relay makes the count update once, then publishes its event", async () => {
    const { t, server, activity } = await tenantWithActivity();
    await react(await t.user("fan"), activity.id, { kind: "like" });
    expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 1 }, version: 2 });
    // What a writer leaves when it dies after storing its reaction: the reaction, with its pending
    // change (its event and its count change) in the same document, the count not updated. Both
    // replicas' relays may find it.
    const ghost = { id: randomUUID(), activity_id: activity.id, user_id: "ghost", kind: "wow", created_at: new Date().toISOString() };
    const event = { id: randomUUID(), type: "reaction.added", tenant_id: t.id, created_at: ghost.created_at, data: ghost, meta: { activity_actor: "user:owner", actor: "user:ghost" } };
    const change = {
      id: randomUUID(),
      at: new Date(Date.now() - 10_000),
      messages: [{ subject: `${inject("namespace")}.notify.event`, msgId: `ev:${event.id}`, data: JSON.stringify(event) }],
      targets: [{ collection: "activities", id: `${t.id}/${activity.id}` }],
      data: { kind: "wow", delta: 1 },
    };
    const mongo = new MongoClient(inject("mongoUrl"));
    try {
      const db = mongo.db(inject("namespace"));
      const _id = `${t.id}/${activity.id}/ghost/wow`;
      await db.collection("reactions").insertOne({
        _id: _id as never,
        ...ghost,
        tenant_id: t.id,
        created_at: new Date(ghost.created_at),
        activity_actor: "user:owner",
        outbox: [change],
        outbox_pending: true,
      });
      const repaired = await until("the count update", async () => {
        const a = await activityOf(server, activity.id);
        return a.reaction_counts.wow === 1 ? a : undefined;
      }, 15_000);
      expect(repaired).toMatchObject({ reaction_counts: { like: 1, wow: 1 }, version: 3 });
      await until("the event", async () => (events.some((e) => e.id === event.id) ? true : undefined), 5_000);
      // Each replica's relay may find the change before the other clears it, and publish it: a
      // plain subscriber then sees that publish twice, the same message (JetStream keeps one:
      // msgID ev:<id>). Never a different one, never more than one per replica.
      const copies = events.filter((e) => e.id === event.id);
      expect(copies.length).toBeLessThanOrEqual(2);
      for (const c of copies) expect(c).toEqual(event);
      // The relay clears the change right after publishing: the event can arrive first.
      await until("the pending change cleared", async () => ((await db.collection("reactions").countDocuments({ _id: _id as never, outbox_pending: true })) === 0 ? true : undefined), 5_000);
      // Made once, whatever the relays did: the count and the version moved by one.
      await sleep(1_500);
      expect(await activityOf(server, activity.id)).toMatchObject({ reaction_counts: { like: 1, wow: 1 }, version: 3 });
    } finally {
      await mongo.close();
    }
  });

  it("publishes reaction.added and reaction.deleted with the Reaction as data and routing meta", async () => {
    const { t, activity } = await tenantWithActivity();
    const fan = await t.user("fan");
    const added = (await react(fan, activity.id, { kind: "like" })).body;
    await react(fan, activity.id, { kind: "like" }); // the existing one: no second event
    expect((await unreact(fan, activity.id, "like")).status).toBe(204);
    // Other producers publish for this tenant too (activity.added, user.updated): the reaction events only.
    const mine = () => events.filter((e) => e.tenant_id === t.id && e.type.startsWith("reaction."));
    await until("two events", async () => (mine().length >= 2 ? true : undefined), 10_000);
    await sleep(300);
    const meta = { activity_actor: "user:owner", actor: "user:fan" };
    expect(mine()).toEqual([
      { id: expect.stringMatching(UUID), type: "reaction.added", tenant_id: t.id, created_at: added.created_at, data: added, meta },
      { id: expect.stringMatching(UUID), type: "reaction.deleted", tenant_id: t.id, created_at: expect.any(String), data: added, meta },
    ]);
  });
});
