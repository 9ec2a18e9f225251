import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats, newEvent, publishEvents, eventSubject, type FeedEvent, type Nats, type RedisConn } from "@feeds/kit";
import { envelope, http, newTenant, systemRedis, tenantRedisKey, type RawAnswer, type TestTenant, queueDrained } from "../support/api.js";
import { until } from "../support/until.js";

// The notification feed through the gateway: who is notified of follows, reactions, comments and
// replies (never of their own act), the page order and its keyset, exact unseen/unread, marks,
// the owner parameter, and the change signal (Redis, copied from the owner's counts document). Follows go through the real routes;
// reactions and comments are published to the notify queue as their producer publishes them.
// After the engagement routes exist, the tests marked "(injected)" can drive those routes instead.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const path = (feed: string) => feed.replace(":", "/");
const follow = (token: string, source: string, target: string) =>
  http("POST", `/v1/feeds/${path(source)}/follows`, { token, body: { target, activity_copy_limit: 0 } });
const unfollow = (token: string, source: string, target: string) => http("DELETE", `/v1/feeds/${path(source)}/follows/${path(target)}`, { token });
const list = (token: string, query = "") => http("GET", `/v1/notifications${query}`, { token });
const mark = (token: string, body: unknown) => http("POST", "/v1/notifications/mark", { token, body });
const signal = (token: string, query = "", etag?: string) =>
  http("GET", `/v1/notifications/signal${query}`, { token, headers: etag ? { "if-none-match": etag } : {} });
const fieldPaths = (res: RawAnswer) => (envelope(res).fields ?? []).map((f) => f.path);

/** Every notification of `owner` (server token), over every page. */
async function all(server: string, owner: string, limit = 100): Promise<any[]> {
  const out: any[] = [];
  let next: string | null = null;
  do {
    const res: RawAnswer = await list(server, `?owner=${owner}&limit=${limit}${next ? `&next=${encodeURIComponent(next)}` : ""}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.push(...res.body.results);
    next = res.body.next;
  } while (next);
  return out;
}

/** Until the notify queue holds nothing: every event published so far has been handled and acked. */
const drained = () => queueDrained("notify");

/** Until `owner` has `n` notifications; answers them. */
const notified = (server: string, owner: string, n: number) =>
  until(`${n} notifications of ${owner}`, async () => {
    const got = await all(server, owner);
    return got.length >= n ? got : undefined;
  }, 20_000);

let nats: Nats;
beforeAll(async () => {
  nats = await connectNats({ NATS_URL: inject("natsUrl"), FEEDS_NAMESPACE: inject("namespace") }, "notifications-test");
});
afterAll(async () => {
  await nats?.close();
});

// The events the engagement service publishes (BRIEF: meta activity_actor, actor, parent_user_id).
function reactionEvent(t: TestTenant, o: { owner: string; by: string; activity?: string; kind?: string; at?: Date }): FeedEvent {
  const at = o.at ?? new Date();
  const data = { id: randomUUID(), activity_id: o.activity ?? randomUUID(), user_id: o.by, kind: o.kind ?? "like", created_at: at.toISOString() };
  return newEvent("reaction.added", t.id, data, { at, meta: { activity_actor: o.owner, actor: `user:${o.by}` } });
}
function commentEvent(t: TestTenant, o: { activityActor: string; by: string; activity: string; parent?: { id: string; user: string }; at?: Date }): FeedEvent {
  const at = o.at ?? new Date();
  const data = {
    id: randomUUID(),
    activity_id: o.activity,
    parent_id: o.parent?.id ?? null,
    user_id: o.by,
    text: "hello",
    reply_count: 0,
    created_at: at.toISOString(),
    edited_at: null,
  };
  const meta: Record<string, string> = { activity_actor: o.activityActor, actor: `user:${o.by}` };
  if (o.parent) meta.parent_user_id = o.parent.user;
  return newEvent("comment.added", t.id, data, { at, meta });
}

describe("who is notified", () => {
  it("a follow of a user: feed notifies that user: actor user:<source id>, object the followed feed, actor_user, created_at the follow's", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("PUT", "/v1/users/bob", { token: server, body: { custom: { name: "Bob" } } })).status).toBe(201);
    const f = await follow(server, "timeline:bob", "user:alice");
    expect(f.status).toBe(201);
    const [n] = await notified(server, "alice", 1);
    expect(n).toEqual({
      id: expect.stringMatching(UUID),
      verb: "follow",
      actor: "user:bob",
      object: "user:alice",
      reaction_kind: null,
      activity_id: null,
      created_at: f.body.created_at,
      seen_at: null,
      read_at: null,
      actor_user: { id: "bob", custom: { name: "Bob" } },
    });
    // A user token reads its own feed; an actor with no user record has actor_user null.
    expect((await follow(server, "user:carol", "user:alice")).status).toBe(201);
    await notified(server, "alice", 2);
    const mine = await list(await t.user("alice"));
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ unseen: 2, unread: 2, next: null });
    expect(mine.body.results.map((r: any) => [r.actor, r.actor_user])).toEqual([
      ["user:carol", null],
      ["user:bob", { id: "bob", custom: { name: "Bob" } }],
    ]);
  });

  it("follows of other groups, one's own follows, repeated follows, unfollows and batch imports notify nobody", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await follow(server, "timeline:alice", "user:alice")).status).toBe(201); // own act
    expect((await follow(server, "user:bob", "timeline:alice")).status).toBe(201); // not a user: feed
    expect((await follow(server, "user:bob", "user:alice")).status).toBe(201);
    expect((await follow(server, "user:bob", "user:alice")).status).toBe(200); // the edge existed
    expect((await unfollow(server, "user:bob", "user:alice")).status).toBe(204);
    const batch = await http("POST", "/v1/batch/follows", {
      token: server,
      body: { follows: [{ source: "user:dave", target: "user:alice" }, { source: "user:erin", target: "user:bob" }] },
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results.every((r: any) => r.ok)).toBe(true);
    await drained();
    expect((await all(server, "alice")).map((n) => n.actor)).toEqual(["user:bob"]);
    expect(await all(server, "bob")).toEqual([]);
    // The followers list does show the imported edge: the import happened, quietly.
    const followers = await http("GET", "/v1/feeds/user/alice/followers", { token: server });
    expect(followers.body.results.map((f: any) => f.source_id).sort()).toEqual(["alice", "dave"].sort());
    // Following again after the unfollow is a new act: a second notification.
    expect((await follow(server, "user:bob", "user:alice")).status).toBe(201);
    expect((await notified(server, "alice", 2)).map((n) => n.actor)).toEqual(["user:bob", "user:bob"]);
  });

  it("(injected) a reaction notifies the activity's user: object the activity, reaction_kind, no activity_id; not one's own, not a non-user activity", async () => {
    const t = await newTenant();
    const server = await t.server();
    const activity = randomUUID();
    const at = new Date(Date.now() - 60_000);
    const e = reactionEvent(t, { owner: "user:alice", by: "bob", activity, kind: "love", at });
    await publishEvents(nats, [
      reactionEvent(t, { owner: "user:alice", by: "alice", activity }), // own act
      reactionEvent(t, { owner: "system:feed", by: "bob" }), // the activity's actor is no user
      e,
    ]);
    const [n] = await notified(server, "alice", 1);
    expect(n).toEqual({
      id: expect.stringMatching(UUID),
      verb: "react",
      actor: "user:bob",
      object: activity,
      reaction_kind: "love",
      activity_id: null,
      created_at: at.toISOString(),
      seen_at: null,
      read_at: null,
      actor_user: null,
    });
    await drained();
    expect(await all(server, "alice")).toHaveLength(1);
  });

  it("(injected) a comment notifies the activity's user, a reply the parent comment's author (object: the reply's id, activity_id: the activity), never one's own", async () => {
    const t = await newTenant();
    const server = await t.server();
    const activity = randomUUID();
    const comment = commentEvent(t, { activityActor: "user:alice", by: "bob", activity, at: new Date(Date.now() - 3000) });
    const reply = commentEvent(t, { activityActor: "user:alice", by: "carol", activity, parent: { id: String(comment.data.id), user: "bob" } });
    await publishEvents(nats, [
      comment,
      reply,
      commentEvent(t, { activityActor: "user:alice", by: "alice", activity }), // own comment
      commentEvent(t, { activityActor: "user:alice", by: "bob", activity, parent: { id: String(comment.data.id), user: "bob" } }), // own reply
    ]);
    const [toAlice] = await notified(server, "alice", 1);
    const [toBob] = await notified(server, "bob", 1);
    expect(toAlice).toMatchObject({ verb: "comment", actor: "user:bob", object: comment.data.id, activity_id: activity, reaction_kind: null, created_at: comment.created_at });
    expect(toBob).toMatchObject({ verb: "comment", actor: "user:carol", object: reply.data.id, activity_id: activity, reaction_kind: null, created_at: reply.created_at });
    await drained();
    // The reply notified its parent's author only, not the activity's user.
    expect(await all(server, "alice")).toHaveLength(1);
    expect(await all(server, "bob")).toHaveLength(1);
    expect(await all(server, "carol")).toEqual([]);
  });

  it("(injected) the same event twice, through JetStream's duplicate window and around it, is one notification", async () => {
    const t = await newTenant();
    const server = await t.server();
    const e = reactionEvent(t, { owner: "user:alice", by: "bob" });
    await publishEvents(nats, [e, e]);
    // A repeat JetStream cannot drop (another message id), as a relay publishing late would make.
    await nats.js.publish(eventSubject(nats), new TextEncoder().encode(JSON.stringify(e)), { msgID: `again:${e.id}` });
    await nats.js.publish(eventSubject(nats), new TextEncoder().encode(JSON.stringify(e)));
    await notified(server, "alice", 1);
    await drained();
    expect(await all(server, "alice")).toHaveLength(1);
    expect((await list(server, "?owner=alice")).body).toMatchObject({ unseen: 1, unread: 1 });
  });
});

describe("follow events from the graph's outbox", () => {
  let mongo: MongoClient;
  beforeAll(async () => {
    mongo = new MongoClient(inject("mongoUrl"));
    await mongo.connect();
  });
  afterAll(async () => {
    await mongo?.close();
  });

  it("the relay publishes a dead writer's follow.created only when its very edge exists", { timeout: 60_000 }, async () => {
    const t = await newTenant();
    const server = await t.server();
    const db = mongo.db(inject("namespace"));
    const stale = new Date(Date.now() - 60_000);
    const edge = (source: string, target: string, at: Date) => ({ _id: `${t.id}/${source}/${target}`, tenant_id: t.id, source_feed: source, target_feed: target, created_at: at });
    /** The pending change a graph writer that died after its edge insert leaves on the edge: its count moves and its follow.created. */
    const pending = (source: string, target: string, at: Date) => {
      const [sg, sid] = source.split(":");
      const [tg, tid] = target.split(":");
      const event = newEvent("follow.created", t.id, { source_group: sg, source_id: sid, target_group: tg, target_id: tid, created_at: at.toISOString() }, { at });
      const change = {
        id: randomUUID(),
        at: stale,
        messages: [{ subject: eventSubject(nats), msgId: `ev:${event.id}`, data: JSON.stringify(event) }],
        targets: [source, target].map((f) => ({ collection: "follow_counts", id: `${t.id}/${f}` })),
        data: { kind: "follow" },
      };
      return { outbox: [change], outbox_pending: true };
    };
    const at = new Date(Date.now() - 30_000);
    const older = new Date(Date.now() - 3_600_000);
    // Died after its edge write: its change rides on the edge and is published. Died before it:
    // no edge, so no change either. A repeat of an older edge: the edge carries no change.
    await db.collection("follows").insertMany([{ ...edge("user:wrote", "user:alice", at), ...pending("user:wrote", "user:alice", at) }, edge("user:repeat", "user:alice", older)] as never[]);
    await until("the relay to finish the change", async () => ((await db.collection("follows").countDocuments({ tenant_id: t.id, outbox_pending: true })) === 0 ? true : undefined), 30_000);
    await drained();
    const got = await all(server, "alice");
    expect(got.map((n) => [n.actor, n.created_at])).toEqual([["user:wrote", at.toISOString()]]);
  });
});

describe("pages", () => {
  /** Publishes reactions to `owner` at the given times, by users `<prefix><i>`; answers their events. */
  async function seed(t: TestTenant, owner: string, times: Date[], prefix = "u"): Promise<FeedEvent[]> {
    const events = times.map((at, i) => reactionEvent(t, { owner: `user:${owner}`, by: `${prefix}${i}`, at }));
    await publishEvents(nats, events);
    return events;
  }
  const order = (a: any, b: any) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1);

  it("limit defaults to 20 within 1..100; next and its alias cursor; malformed ones 400", async () => {
    const t = await newTenant();
    const server = await t.server();
    const base = Date.now() - 3_600_000;
    // Four at the same instant: ties go by id.
    await seed(t, "alice", Array.from({ length: 25 }, (_, i) => new Date(base + Math.floor(i / 4) * 1000)));
    const everything = await notified(server, "alice", 25);
    expect(everything).toEqual([...everything].sort(order));
    const first = await list(server, "?owner=alice");
    expect(first.body.results).toHaveLength(20);
    expect(first.body.results).toEqual(everything.slice(0, 20));
    const second = await list(server, `?owner=alice&cursor=${first.body.next}`);
    expect(second.body).toMatchObject({ results: everything.slice(20), next: null, unseen: 25, unread: 25 });
    // next wins over cursor.
    expect((await list(server, `?owner=alice&next=${first.body.next}&cursor=garbage`)).body.results).toEqual(everything.slice(20));
    for (const q of ["limit=0", "limit=101", "limit=x", "next=%%%", "next=bm90IGFuIGFycmF5"]) {
      const res = await list(server, `?owner=alice&${q}`);
      expect(res.status, q).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
  });

  it("a walk joins without loss or repeats while new notifications arrive: newer ones ahead of it, older ones behind its cursor in their place", { timeout: 120_000 }, async () => {
    const t = await newTenant();
    const server = await t.server();
    const base = Date.now() - 3_600_000;
    const seeded = await seed(t, "alice", Array.from({ length: 40 }, (_, i) => new Date(base + i * 1000)));
    await notified(server, "alice", 40);
    const byEvent = new Map((await all(server, "alice")).map((n) => [n.actor, n.id]));
    const seededIds = new Set(seeded.map((e) => byEvent.get(String(e.meta?.actor))));

    const walk: any[] = [];
    let res: RawAnswer = await list(server, "?owner=alice&limit=7");
    walk.push(...res.body.results);
    // While the walk goes on: real follows and reactions newer than all it has seen, and
    // reactions older than everything (behind its cursor).
    const follows = Promise.all(Array.from({ length: 8 }, (_, i) => follow(server, `timeline:f${i}`, "user:alice")));
    const newer = await seed(t, "alice", Array.from({ length: 8 }, () => new Date()), "new");
    const older = await seed(t, "alice", Array.from({ length: 8 }, (_, i) => new Date(base - (i + 1) * 1000)), "old");
    let pages = 1;
    while (res.body.next) {
      // Halfway, let everything land, so that the older ones are behind the cursor when it passes.
      if (++pages === 4) await drained();
      res = await list(server, `?owner=alice&limit=7&next=${res.body.next}`);
      expect(res.status).toBe(200);
      walk.push(...res.body.results);
      await sleep(50);
    }
    expect((await follows).every((f) => f.status === 201)).toBe(true);
    await drained();

    const ids = walk.map((n) => n.id);
    expect(new Set(ids).size).toBe(ids.length); // no repeats
    expect(walk).toEqual([...walk].sort(order)); // one order across the page boundaries
    for (const id of seededIds) expect(ids).toContain(id); // no loss
    const final = await all(server, "alice");
    expect(final).toHaveLength(40 + 8 + 8 + 8);
    const olderIds = final.filter((n) => older.some((e) => e.meta?.actor === n.actor)).map((n) => n.id);
    expect(olderIds).toHaveLength(8);
    for (const id of olderIds) expect(ids).toContain(id); // arrived behind the cursor: in the walk, in order
    // The newer ones and the follows are ahead of where the walk began: not in it, but on top of a fresh first page.
    const ahead = final.slice(0, 16);
    expect(ahead.filter((n) => n.verb === "follow")).toHaveLength(8);
    expect(ahead.filter((n) => newer.some((e) => e.meta?.actor === n.actor))).toHaveLength(8);
    expect(ids.filter((id) => ahead.some((n) => n.id === id))).toEqual([]);
    expect(walk).toHaveLength(40 + 8);
  });

  it("walks racing a stream of notifications at random times never repeat or skip one that was there before them", { timeout: 120_000 }, async () => {
    const t = await newTenant();
    const server = await t.server();
    const base = Date.now() - 3_600_000;
    await seed(t, "alice", Array.from({ length: 60 }, (_, i) => new Date(base + i * 60_000)));
    const before = await notified(server, "alice", 60);
    let streaming = true;
    const stream = (async () => {
      let i = 0;
      while (streaming) {
        // Anywhere in the hour the walk covers, ahead of or behind its cursor; and real follows.
        await seed(t, "alice", [new Date(base + Math.random() * 3_600_000), new Date(base + Math.random() * 3_600_000)], `s${i}-`);
        await follow(server, `timeline:r${i++}`, "user:alice");
        await sleep(20);
      }
    })();
    try {
      for (let w = 0; w < 4; w++) {
        const walk: any[] = [];
        let next: string | null = null;
        do {
          const res: RawAnswer = await list(server, `?owner=alice&limit=${5 + w}${next ? `&next=${next}` : ""}`);
          walk.push(...res.body.results);
          next = res.body.next;
        } while (next);
        const ids = walk.map((n) => n.id);
        expect(new Set(ids).size).toBe(ids.length);
        expect(walk).toEqual([...walk].sort(order));
        for (const n of before) expect(ids).toContain(n.id);
      }
    } finally {
      streaming = false;
      await stream;
    }
  });
});

describe("counts and marks", () => {
  it("marks by ids and all answer exact counts; read implies seen; another owner's and unknown ids are ignored", async () => {
    const t = await newTenant();
    const server = await t.server();
    await publishEvents(nats, [
      ...Array.from({ length: 5 }, (_, i) => reactionEvent(t, { owner: "user:alice", by: `u${i}`, at: new Date(Date.now() - i * 1000) })),
      reactionEvent(t, { owner: "user:bob", by: "u9" }),
    ]);
    const ns = await notified(server, "alice", 5);
    const [bobs] = await notified(server, "bob", 1);
    const alice = await t.user("alice");
    const ids = ns.map((n) => n.id);

    const seen = await mark(alice, { seen: [ids[0], ids[1], bobs.id, randomUUID()] });
    expect(seen.status, JSON.stringify(seen.body)).toBe(200);
    expect(seen.body).toEqual({ unseen: 3, unread: 5 });
    // Read implies seen; an id already seen stays as it was.
    expect((await mark(alice, { read: [ids[1].toUpperCase(), ids[2]] })).body).toEqual({ unseen: 2, unread: 3 });
    const after = await all(server, "alice");
    const byId = new Map(after.map((n) => [n.id, n]));
    expect(byId.get(ids[0])).toMatchObject({ seen_at: expect.any(String), read_at: null });
    expect(byId.get(ids[1])).toMatchObject({ seen_at: byId.get(ids[0]).seen_at, read_at: expect.any(String) });
    expect(byId.get(ids[2])).toMatchObject({ seen_at: expect.any(String), read_at: expect.any(String) });
    expect(byId.get(ids[3])).toMatchObject({ seen_at: null, read_at: null });
    expect((await list(alice)).body).toMatchObject({ unseen: 2, unread: 3 });
    // Bob's stayed his.
    expect((await list(await t.user("bob"))).body).toMatchObject({ unseen: 1, unread: 1, results: [{ seen_at: null, read_at: null }] });

    expect((await mark(alice, { seen: true })).body).toEqual({ unseen: 0, unread: 3 });
    expect((await mark(server, { read: true, owner: "alice" })).body).toEqual({ unseen: 0, unread: 0 });
    expect((await all(server, "alice")).every((n) => n.seen_at && n.read_at)).toBe(true);
    expect((await mark(alice, { seen: [] })).body).toEqual({ unseen: 0, unread: 0 });
    // Bob's still untouched.
    expect((await list(server, "?owner=bob")).body).toMatchObject({ unseen: 1, unread: 1 });
  });

  it("mark bodies are checked: seen/read true or up to 100 uuids, at least one of them", async () => {
    const t = await newTenant();
    const alice = await t.user("alice");
    const cases: [unknown, string[]][] = [
      [{}, [""]],
      [{ seen: false }, ["seen"]],
      [{ read: "all" }, ["read"]],
      [{ seen: ["not-a-uuid"] }, ["seen.0"]],
      [{ read: Array.from({ length: 101 }, () => randomUUID()) }, ["read"]],
    ];
    for (const [body, paths] of cases) {
      const res = await mark(alice, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(fieldPaths(res).sort(), JSON.stringify(body)).toEqual(paths);
    }
  });

  it("owner: a server token must name it (400), a user token may not (403), on all three routes", async () => {
    const t = await newTenant();
    const server = await t.server();
    const alice = await t.user("alice");
    for (const res of [await list(server), await signal(server), await mark(server, { seen: true })]) {
      expect(res.status).toBe(400);
      expect(fieldPaths(res)).toEqual(["owner"]);
    }
    for (const res of [await list(alice, "?owner=bob"), await list(alice, "?owner=alice"), await signal(alice, "?owner=bob"), await mark(alice, { seen: true, owner: "bob" })]) {
      expect(res.status).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
    }
    expect((await list(server, "?owner=bad:owner")).status).toBe(400);
    expect((await list(server, "?owner=alice")).body).toEqual({ results: [], next: null, unseen: 0, unread: 0 });
  });
});

describe("the change signal", () => {
  it("answers {unseen, unread, version} with an ETag (304 when unchanged) that changes on new notifications and on marks", async () => {
    const t = await newTenant();
    const server = await t.server();
    const alice = await t.user("alice");
    const s0 = await signal(alice);
    expect(s0.status).toBe(200);
    expect(s0.body).toEqual({ unseen: 0, unread: 0, version: expect.any(Number) });
    const etag0 = s0.headers.get("etag") ?? "";
    expect(etag0).toMatch(/^".+"$/);
    const same = await signal(alice, "", etag0);
    expect(same.status).toBe(304);
    expect(same.headers.get("etag")).toBe(etag0);

    expect((await follow(server, "user:bob", "user:alice")).status).toBe(201);
    const s1 = await until("the signal to move", async () => {
      const s = await signal(alice, "", etag0);
      return s.status === 200 ? s : undefined;
    }, 20_000);
    expect(s1.body).toEqual({ unseen: 1, unread: 1, version: expect.any(Number) });
    expect(s1.body.version).toBeGreaterThan(s0.body.version);
    const etag1 = s1.headers.get("etag") ?? "";
    expect(etag1).not.toBe(etag0);
    // The server token reads the same signal by owner.
    expect((await signal(server, "?owner=alice", etag1)).status).toBe(304);

    // A mark answers after the signal moved: read your writes.
    expect((await mark(alice, { seen: true })).body).toEqual({ unseen: 0, unread: 1 });
    const s2 = await signal(alice, "", etag1);
    expect(s2.status).toBe(200);
    expect(s2.body).toMatchObject({ unseen: 0, unread: 1 });
    expect(s2.body.version).toBeGreaterThan(s1.body.version);
    expect((await signal(alice, "", s2.headers.get("etag") ?? "")).status).toBe(304);
  });

  it("stays exact while notifications arrive and marks run at the same time", { timeout: 60_000 }, async () => {
    const t = await newTenant();
    const server = await t.server();
    const alice = await t.user("alice");
    const events = Array.from({ length: 60 }, (_, i) => reactionEvent(t, { owner: "user:alice", by: `u${i}` }));
    const publishing = (async () => {
      for (let i = 0; i < events.length; i += 5) {
        await publishEvents(nats, events.slice(i, i + 5));
        await sleep(30);
      }
    })();
    const marking = (async () => {
      for (let i = 0; i < 12; i++) {
        const some = (await list(alice, "?limit=5")).body.results.map((n: any) => n.id);
        const res = await mark(alice, i % 3 === 0 ? { seen: true } : i % 3 === 1 ? { read: some } : { seen: some });
        expect(res.status).toBe(200);
        expect((await signal(alice)).status).toBe(200);
        await sleep(40);
      }
    })();
    await Promise.all([publishing, marking]);
    // A tail after the last mark: some stay unseen.
    await publishEvents(nats, Array.from({ length: 5 }, (_, i) => reactionEvent(t, { owner: "user:alice", by: `tail${i}` })));
    await notified(server, "alice", 65);
    await drained();
    const everything = await all(server, "alice");
    const truth = { unseen: everything.filter((n) => !n.seen_at).length, unread: everything.filter((n) => !n.read_at).length };
    expect(truth.unseen).toBeGreaterThanOrEqual(5);
    expect(truth.unread).toBeGreaterThan(truth.unseen);
    expect((await list(alice)).body).toMatchObject(truth);
    expect((await signal(alice)).body).toEqual({ ...truth, version: expect.any(Number) });
  });

  describe("kept in MongoDB by increments, copied to Redis", () => {
    let mongo: MongoClient;
    // The system's own connection (a cluster's too: the copy's slot may be on any master).
    let redis: RedisConn;
    beforeAll(async () => {
      mongo = new MongoClient(inject("mongoUrl"));
      await mongo.connect();
      redis = await systemRedis();
    });
    afterAll(async () => {
      await mongo?.close();
      await redis?.close();
    });
    const counts = () => mongo.db(inject("namespace")).collection<{ _id: string; unseen: number }>("notification_counts");

    it("answers from Redis alone: a doctored copy is what it answers; a lost one is read again from the counts document (no recount), at the same version", async () => {
      const t = await newTenant();
      const alice = await t.user("alice");
      await publishEvents(nats, [reactionEvent(t, { owner: "user:alice", by: "bob" }), reactionEvent(t, { owner: "user:alice", by: "carol" })]);
      await notified(await t.server(), "alice", 2);
      const s = await until("the signal", async () => {
        const r = await signal(alice);
        return r.body.unseen === 2 ? r : undefined;
      }, 20_000);
      const copy = tenantRedisKey(t.id, "ncounts", "alice");
      await redis.redis.hset(copy, "unseen", "999");
      expect((await signal(alice)).body).toEqual({ unseen: 999, unread: 2, version: s.body.version });
      await redis.redis.del(copy);
      expect((await signal(alice)).body).toEqual({ unseen: 2, unread: 2, version: s.body.version });
      expect(await redis.redis.hmget(copy, "unseen", "unread")).toEqual(["2", "2"]);
    });

    it("counts move by increments, never by counting the records: a doctored document count moves by one with the next notification", async () => {
      const t = await newTenant();
      const alice = await t.user("alice");
      await publishEvents(nats, [reactionEvent(t, { owner: "user:alice", by: "bob" }), reactionEvent(t, { owner: "user:alice", by: "carol" })]);
      await notified(await t.server(), "alice", 2);
      const s = await until("the signal", async () => {
        const r = await signal(alice);
        return r.body.unseen === 2 ? r : undefined;
      }, 20_000);
      await counts().updateOne({ _id: `${t.id}/alice` }, { $set: { unseen: 999 } });
      await publishEvents(nats, [reactionEvent(t, { owner: "user:alice", by: "dave" })]);
      const moved = await until("the next notification counted", async () => {
        const r = await signal(alice);
        return r.body.unread === 3 ? r : undefined;
      }, 20_000);
      expect(moved.body).toEqual({ unseen: 1000, unread: 3, version: s.body.version + 1 });
    });

    it("a worker that died right after its insert leaves the record with its pending change: the page counts it at once, the relay within seconds, once", async () => {
      const t = await newTenant();
      const alice = await t.user("alice");
      await publishEvents(nats, [reactionEvent(t, { owner: "user:alice", by: "bob" })]);
      await notified(await t.server(), "alice", 1);
      await drained();
      const s = await signal(alice);
      expect(s.body).toMatchObject({ unseen: 1, unread: 1 });
      const id = randomUUID();
      const change = { id, at: new Date(), messages: [], targets: [{ collection: "notification_counts", id: `${t.id}/alice` }], data: { unseen: 1, unread: 1 } };
      await mongo.db(inject("namespace")).collection("notifications").insertOne({
        _id: id as never,
        tenant_id: t.id,
        owner: "alice",
        verb: "follow",
        actor: "user:zed",
        object: "user:alice",
        reaction_kind: null,
        activity_id: null,
        created_at: new Date(),
        seen_at: null,
        read_at: null,
        outbox: [change],
        outbox_pending: true,
      });
      const page = await list(alice);
      expect(page.body.results).toHaveLength(2);
      expect(page.body).toMatchObject({ unseen: 2, unread: 2 });
      const after = await until("the relay to count it", async () => {
        const r = await signal(alice, "", s.headers.get("etag") ?? "");
        return r.status === 200 ? r : undefined;
      }, 20_000);
      expect(after.body).toEqual({ unseen: 2, unread: 2, version: s.body.version + 1 });
      await sleep(3000);
      expect((await signal(alice)).body).toEqual({ unseen: 2, unread: 2, version: s.body.version + 1 });
    });
  });
});
