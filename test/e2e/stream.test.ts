import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats, liveFeedSubject, liveOwnerSubject, liveStreamName, type Nats } from "@feeds/kit";
import { http, newTenant, queueDrained, staffToken, systemRedis, tenantRedisKey, type TestTenant } from "../support/api.js";
import { openStream, type SseStream } from "../support/sse.js";
import { scrape, total } from "../support/metrics.js";

// The live stream through the gateway (docs/stream.md): credentials (bearer and single-use
// tickets), the feed set and notification rules, frames, resume after a cursor with nothing lost
// and nothing twice, follower feeds after fan-out, notifications and their counts, the per-user
// limit, the heartbeat, and a client that does not read.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const path = (feed: string) => feed.replace(":", "/");

describe("GET /v1/stream", () => {
  let t: TestTenant;
  let server: string;
  const open: SseStream[] = [];
  const stream = async (p: string, opts: Parameters<typeof openStream>[1] = {}) => {
    const s = await openStream(p, opts);
    open.push(s);
    return s;
  };
  const post = async (feed: string, object: string, custom: Record<string, unknown> = {}) => {
    const res = await http("POST", `/v1/feeds/${path(feed)}/activities`, { token: server, body: { actor: `user:${feed.split(":")[1]}`, verb: "post", object, custom } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string };
  };
  const added = (s: SseStream, feed: string) => s.events().filter((e) => e.event === "activity.added" && e.json.feed === feed);

  beforeAll(async () => {
    t = await newTenant();
    server = await t.server();
    for (const u of ["alice", "bob", "carol"]) {
      expect((await http("PUT", `/v1/users/${u}`, { token: server, body: { custom: { name: u } } })).status).toBeLessThan(300);
    }
  });

  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });

  it("answers 401 without a credential, and 400 or 403 for selections the caller may not watch", async () => {
    const none = await stream("/v1/stream?feeds=user:alice");
    expect(none.status).toBe(401);
    expect(none.body.error).toMatchObject({ code: "UNAUTHENTICATED", requestId: none.headers["x-request-id"] });

    const bob = await t.user("bob");
    const others = await stream("/v1/stream?notifications=true&owner=alice", { token: bob });
    expect(others.status).toBe(403);
    expect(others.body.error.code).toBe("FORBIDDEN");

    const cases: [string, string][] = [
      ["/v1/stream", "feeds"],
      [`/v1/stream?feeds=${Array.from({ length: 21 }, (_, i) => `user:u${i}`).join(",")}`, "feeds"],
      ["/v1/stream?feeds=user:a%20b", "feeds"],
      ["/v1/stream?feeds=nocolon", "feeds"],
      ["/v1/stream?notifications=true", "owner"],
      ["/v1/stream?feeds=user:alice&last_event_id=not-a-cursor", "last_event_id"],
    ];
    for (const [p, field] of cases) {
      const res = await stream(p, { token: server });
      expect(res.status, p).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_FAILED");
      expect(res.body.error.fields.map((f: { path: string }) => f.path), p).toContain(field);
    }
    // A cursor this stream never wrote yet (the future) is refused too.
    const future = Buffer.from(`${Number.MAX_SAFE_INTEGER}.${Date.now()}`).toString("base64url");
    const ahead = await stream(`/v1/stream?feeds=user:alice&last_event_id=${future}`, { token: server });
    expect(ahead.status).toBe(400);
    expect(ahead.body.error.fields[0].path).toBe("last_event_id");
  });

  it("starts with retry and a cursor, then frames each activity.added of a watched feed with its id, feed and activity", async () => {
    const s = await stream("/v1/stream?feeds=user:alice", { token: await t.user("carol") });
    expect(s.status).toBe(200);
    expect(s.headers["content-type"]).toMatch(/^text\/event-stream/);
    await s.until("the start", () => s.frames.length >= 1);
    expect(s.frames[0]?.retry).toBe(3000);
    expect(s.frames[0]?.id).toMatch(/^[A-Za-z0-9_-]+$/);
    const a = await post("user:alice", "note:1", { n: 1 });
    await s.until("the event", () => added(s, "user:alice").length === 1);
    const [e] = added(s, "user:alice");
    expect(e?.id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(e?.json.feed).toBe("user:alice");
    expect(e?.json.activity).toMatchObject({ id: a.id, actor: "user:alice", verb: "post", object: "note:1", custom: { n: 1 }, actor_user: { id: "alice", custom: { name: "alice" } } });
    // Without the caller-specific own_reactions, as a server read shows it.
    expect(e?.json.activity).not.toHaveProperty("own_reactions");
    // What the stream did not watch, it does not show.
    await post("user:bob", "note:other");
    await sleep(500);
    expect(s.events().map((f) => f.json.feed)).toEqual(["user:alice"]);
  });

  it("resumes: disconnected after event N, 3 posts, Last-Event-ID N replays exactly those 3 in order, then live", async () => {
    const feed = `user:r${randomBytes(3).toString("hex")}`;
    const first = await stream(`/v1/stream?feeds=${feed}`, { token: server });
    const n = await post(feed, "note:n");
    await first.until("event N", () => added(first, feed).length === 1);
    expect(added(first, feed)[0]?.json.activity.id).toBe(n.id);
    const cursor = first.lastId() as string;
    first.close();

    const missed = [];
    for (let i = 0; i < 3; i++) missed.push((await post(feed, `note:m${i}`)).id);
    const again = await stream(`/v1/stream?feeds=${feed}`, { token: server, headers: { "last-event-id": cursor } });
    expect(again.status).toBe(200);
    await again.until("the 3 missed", () => added(again, feed).length >= 3);
    const live = await post(feed, "note:live");
    await again.until("the live one", () => added(again, feed).length >= 4);
    await sleep(300);
    expect(again.events().map((e) => [e.event, e.json.activity.id])).toEqual([...missed, live.id].map((id) => ["activity.added", id]));
    // Ids move forward: each frame's id is a cursor after the one before.
    const ids = again.events().map((e) => e.id);
    expect(new Set(ids).size).toBe(4);

    // The query parameter does what the header does (a browser's new EventSource).
    const viaQuery = await stream(`/v1/stream?feeds=${feed}&last_event_id=${cursor}`, { token: server });
    await viaQuery.until("the replay", () => added(viaQuery, feed).length >= 4);
    expect(added(viaQuery, feed).map((e) => e.json.activity.id)).toEqual([...missed, live.id]);
  });

  it("a resume while posts go on: the replay, then live events, with no gap and no repeat at the seam", async () => {
    const feed = `user:seam${randomBytes(3).toString("hex")}`;
    const first = await stream(`/v1/stream?feeds=${feed}`, { token: server });
    await first.until("the start", () => first.frames.length >= 1);
    const cursor = first.lastId() as string;
    first.close();
    // Posts go on before, during and after the reconnect (its replay and its switch to live).
    const posted: string[] = [];
    let writing = true;
    const writer = (async () => {
      while (writing || posted.length < 30) posted.push((await post(feed, `note:${posted.length}`)).id);
    })();
    while (posted.length < 10) await sleep(10);
    const again = await stream(`/v1/stream?feeds=${feed}`, { token: server, headers: { "last-event-id": cursor } });
    expect(again.status).toBe(200);
    await sleep(300);
    writing = false;
    await writer;
    await again.until("every post", () => added(again, feed).length >= posted.length, 30_000);
    await sleep(300);
    expect(added(again, feed).map((e) => e.json.activity.id)).toEqual(posted);
  });

  it("a browser origin the tenant allows gets the stream's CORS headers (the stream writes its own answer)", async () => {
    const own = await newTenant();
    const origin = `https://app-${randomBytes(4).toString("hex")}.example`;
    const set = await http("PUT", `/admin/tenants/${own.id}/origins`, { token: await staffToken(), body: { origins: [origin] } });
    expect(set.status).toBe(200);
    const token = await own.server();
    let s: SseStream | undefined;
    for (let i = 0; i < 40; i++) {
      s = await stream("/v1/stream?feeds=user:alice", { token, headers: { origin } });
      if (s.headers["access-control-allow-origin"] === origin) break;
      s.close();
      await sleep(100);
    }
    expect(s?.status).toBe(200);
    expect(s?.headers["access-control-allow-origin"]).toBe(origin);
    expect(s?.headers["access-control-expose-headers"]).toMatch(/X-Request-Id/);
    expect(s?.headers.vary).toMatch(/Origin/);
    const other = await stream("/v1/stream?feeds=user:alice", { token, headers: { origin: "https://elsewhere.example" } });
    expect(other.status).toBe(200);
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("a follower feed's activity.added comes after fan-out wrote its entry; patches and deletes reach every feed holding it", async () => {
    const star = `s${randomBytes(3).toString("hex")}`;
    const fan = `f${randomBytes(3).toString("hex")}`;
    expect((await http("POST", `/v1/feeds/timeline/${fan}/follows`, { token: server, body: { target: `user:${star}` } })).status).toBe(201);
    const s = await stream(`/v1/stream?feeds=timeline:${fan},user:${star}`, { token: server });
    await s.until("the start", () => s.frames.length >= 1);
    const a = await post(`user:${star}`, "note:fan");
    await s.until("the follower feed's event", () => added(s, `timeline:${fan}`).length === 1);
    // A refetch on the event finds the entry.
    const read = await http("GET", `/v1/feeds/timeline/${fan}`, { token: server });
    expect(read.body.results.map((x: { id: string }) => x.id)).toContain(a.id);
    expect(added(s, `user:${star}`).map((e) => e.json.activity.id)).toEqual([a.id]);

    expect((await http("PATCH", `/v1/activities/${a.id}`, { token: server, body: { set: { "custom.edited": true } } })).status).toBe(200);
    await s.until("two activity.updated", () => s.events().filter((e) => e.event === "activity.updated").length === 2);
    const updated = s.events().filter((e) => e.event === "activity.updated");
    expect(updated.map((e) => e.json.feed).sort()).toEqual([`timeline:${fan}`, `user:${star}`].sort());
    expect(updated[0]?.json.activity).toMatchObject({ id: a.id, version: 2, custom: { edited: true } });

    expect((await http("DELETE", `/v1/activities/${a.id}`, { token: server })).status).toBe(204);
    await s.until("two activity.deleted", () => s.events().filter((e) => e.event === "activity.deleted").length === 2);
    const deleted = s.events().filter((e) => e.event === "activity.deleted");
    expect(deleted.map((e) => e.json.feed).sort()).toEqual([`timeline:${fan}`, `user:${star}`].sort());
    expect(deleted[0]?.json.activity.deleted_at).toEqual(expect.any(String));
  });

  describe("only watched feeds are buffered", () => {
    let nats: Nats;
    beforeAll(async () => {
      nats = await connectNats({ NATS_URL: inject("natsUrl"), FEEDS_NAMESPACE: inject("namespace") }, "stream-test");
    });
    afterAll(async () => nats.close());
    /** Messages the live stream holds for a feed of the tenant. */
    const buffered = async (feed: string) => held(liveFeedSubject(nats, t.id, feed));
    const held = async (subject: string) => {
      const info = await nats.jsm.streams.info(liveStreamName(nats), { subjects_filter: subject });
      return info.state.subjects?.[subject] ?? 0;
    };
    const cursorAfterOne = async (feed: string) => {
      const s = await stream(`/v1/stream?feeds=${feed}`, { token: server });
      await s.until("the start", () => s.frames.length >= 1);
      await post(feed, "note:first");
      await s.until("its event", () => added(s, feed).length === 1);
      const cursor = s.lastId() as string;
      s.close();
      return cursor;
    };

    it("fan-out buffers activity.added for the follower feeds a stream watches, and none for the others", async () => {
      const star = `user:w${randomBytes(3).toString("hex")}`;
      const [watched, unwatched] = [`timeline:w${randomBytes(3).toString("hex")}`, `timeline:u${randomBytes(3).toString("hex")}`];
      for (const f of [watched, unwatched]) expect((await http("POST", `/v1/feeds/${path(f)}/follows`, { token: server, body: { target: star } })).status).toBe(201);
      const s = await stream(`/v1/stream?feeds=${watched}`, { token: server });
      await s.until("the start", () => s.frames.length >= 1);
      await post(star, "note:w");
      await s.until("the watched follower feed's event", () => added(s, watched).length === 1);
      await queueDrained("fanout");
      expect(await http("GET", `/v1/feeds/${path(unwatched)}`, { token: server })).toMatchObject({ body: { results: [expect.anything()] } });
      // The watched feed holds its mark's message (where its buffer starts) and the event.
      expect({ watched: await buffered(watched), unwatched: await buffered(unwatched) }).toEqual({ watched: 2, unwatched: 0 });
    });

    it("a resume naming a feed no stream watched before its cursor is reset (cursor_too_old), then live on both", async () => {
      const [a, b] = [`user:ra${randomBytes(3).toString("hex")}`, `user:rb${randomBytes(3).toString("hex")}`];
      const cursor = await cursorAfterOne(a);
      await post(b, "note:unbuffered");
      const again = await stream(`/v1/stream?feeds=${a},${b}`, { token: server, headers: { "last-event-id": cursor } });
      await again.until("the reset", () => again.events().length >= 1);
      expect(again.events()[0]).toMatchObject({ event: "reset", json: { reason: "cursor_too_old" } });
      const live = await post(b, "note:live");
      await again.until("the live event", () => added(again, b).length === 1);
      expect(added(again, b)[0]?.json.activity.id).toBe(live.id);
    });

    it("an owner's notifications are buffered only while a stream watches them; a resume of them from before their mark is reset", async () => {
      const owner = `nw${randomBytes(3).toString("hex")}`;
      const mine = await t.user(owner);
      const subject = liveOwnerSubject(nats, t.id, owner);
      const follow = async (from: string) =>
        expect((await http("POST", `/v1/feeds/user/${from}/follows`, { token: server, body: { target: `user:${owner}` } })).status).toBe(201);
      // Nobody watches: the notification is stored and counted, and nothing is buffered.
      const feed = `user:nwf${randomBytes(3).toString("hex")}`;
      const cursor = await cursorAfterOne(feed);
      await follow("alice");
      await queueDrained("notify");
      expect((await http("GET", "/v1/notifications", { token: mine })).body).toMatchObject({ results: [{ verb: "follow", actor: "user:alice" }], unseen: 1 });
      expect(await held(subject)).toBe(0);
      // A resume naming the notifications with a cursor from before their mark is reset.
      const again = await stream(`/v1/stream?feeds=${feed}&notifications=true`, { token: mine, headers: { "last-event-id": cursor } });
      await again.until("the reset", () => again.events().length >= 1);
      expect(again.events()[0]).toMatchObject({ event: "reset", json: { reason: "cursor_too_old" } });
      // Watched now: the next notification is live and buffered after the mark's message.
      await follow("bob");
      await again.until("notification.added", () => again.events().some((e) => e.event === "notification.added"));
      expect(again.events().find((e) => e.event === "notification.added")?.json).toMatchObject({ notification: { actor: "user:bob" }, unseen: 2, groups_unseen: 1 });
      expect(await held(subject)).toBe(2);
    });

    it("a resume of a feed whose mark Redis lost is reset (cursor_too_old): what was left out meanwhile is not missed in silence", async () => {
      const feed = `user:lost${randomBytes(3).toString("hex")}`;
      const cursor = await cursorAfterOne(feed);
      const redis = await systemRedis();
      try {
        expect(await redis.redis.del(tenantRedisKey(t.id, "lw", feed))).toBe(1);
      } finally {
        await redis.close();
      }
      const again = await stream(`/v1/stream?feeds=${feed}`, { token: server, headers: { "last-event-id": cursor } });
      await again.until("the reset", () => again.events().length >= 1);
      expect(again.events()[0]).toMatchObject({ event: "reset", json: { reason: "cursor_too_old" } });
    });
  });

  it("notifications=true: notification.added with the counts, then notification.counts after a mark", async () => {
    const owner = `n${randomBytes(3).toString("hex")}`;
    const mine = await t.user(owner);
    const s = await stream("/v1/stream?notifications=true", { token: mine });
    expect(s.status).toBe(200);
    await s.until("the start", () => s.frames.length >= 1);
    expect((await http("POST", `/v1/feeds/user/alice/follows`, { token: server, body: { target: `user:${owner}` } })).status).toBe(201);
    await s.until("notification.added", () => s.events().some((e) => e.event === "notification.added"));
    const n = s.events().find((e) => e.event === "notification.added");
    expect(n?.json).toMatchObject({
      notification: { verb: "follow", actor: "user:alice", actor_user: { id: "alice", custom: { name: "alice" } }, seen_at: null },
      unseen: 1,
      unread: 1,
      group: { group_key: expect.any(String), activity_count: 1, actor_count: 1 },
      groups_unseen: 1,
      groups_unread: 1,
    });
    expect(n?.json.notification).not.toHaveProperty("group_key");
    expect((await http("POST", "/v1/notifications/mark", { token: mine, body: { seen: true } })).body).toEqual({ unseen: 0, unread: 1 });
    await s.until("notification.counts", () => s.events().some((e) => e.event === "notification.counts"));
    expect(s.events().find((e) => e.event === "notification.counts")?.json).toEqual({ unseen: 0, unread: 1, groups_unseen: 0, groups_unread: 1 });

    // A server token names the owner.
    const viaServer = await stream(`/v1/stream?notifications=true&owner=${owner}`, { token: server });
    expect(viaServer.status).toBe(200);
  });

  it("tickets: minted with a token for one selection, open the stream once; a used ticket or another selection is 401", async () => {
    const carol = await t.user("carol");
    const minted = await http("POST", "/v1/stream/tickets", { token: carol, body: { feeds: ["user:bob", "user:alice"], notifications: true } });
    expect(minted.status).toBe(201);
    expect(minted.body.ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(minted.body.expires_at) - Date.now()).toBeGreaterThan(50_000);
    expect(Date.parse(minted.body.expires_at) - Date.now()).toBeLessThanOrEqual(60_000);
    // Order of the feeds does not matter; the set does.
    const s = await stream(`/v1/stream?feeds=user:alice,user:bob&notifications=true&ticket=${minted.body.ticket}`);
    expect(s.status).toBe(200);
    const a = await post("user:bob", "note:ticket");
    await s.until("the event", () => added(s, "user:bob").some((e) => e.json.activity.id === a.id));

    const used = await stream(`/v1/stream?feeds=user:alice,user:bob&notifications=true&ticket=${minted.body.ticket}`);
    expect(used.status).toBe(401);
    expect(used.body.error.code).toBe("UNAUTHENTICATED");

    const other = await http("POST", "/v1/stream/tickets", { token: carol, body: { feeds: ["user:bob"] } });
    const elsewhere = await stream(`/v1/stream?feeds=user:alice&ticket=${other.body.ticket}`);
    expect(elsewhere.status).toBe(401);
    const unknown = await stream(`/v1/stream?feeds=user:bob&ticket=${randomBytes(32).toString("base64url")}`);
    expect(unknown.status).toBe(401);

    // Minting follows the stream's own rules.
    expect((await http("POST", "/v1/stream/tickets", { token: carol, body: { notifications: true, owner: "bob" } })).status).toBe(403);
    expect((await http("POST", "/v1/stream/tickets", { token: carol, body: { feeds: [] } })).status).toBe(400);
    expect((await http("POST", "/v1/stream/tickets", { body: { feeds: ["user:bob"] } })).status).toBe(401);
  });

  it("at most 5 streams per user: the 6th answers 429 with Retry-After; a closed one frees its place", async () => {
    const who = await t.user(`l${randomBytes(3).toString("hex")}`);
    const five = [];
    for (let i = 0; i < 5; i++) five.push(await stream("/v1/stream?feeds=user:alice", { token: who }));
    expect(five.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    // The gateway counts what it holds open (other tests' streams may be open too).
    expect(total(await scrape(), "feeds_stream_open")).toBeGreaterThanOrEqual(5);
    const sixth = await stream("/v1/stream?feeds=user:alice", { token: who });
    expect(sixth.status).toBe(429);
    expect(sixth.body.error.code).toBe("RATE_LIMITED");
    expect(Number(sixth.headers["retry-after"])).toBeGreaterThan(0);
    five[0]?.close();
    let again: SseStream | undefined;
    for (let i = 0; i < 40 && again?.status !== 200; i++) {
      await sleep(100);
      again = await stream("/v1/stream?feeds=user:alice", { token: who });
    }
    expect(again?.status).toBe(200);
  });

  it("open streams are not requests in flight: 40 of them (the overload guard lets 32 requests execute) leave reads answering", async () => {
    const own = await newTenant();
    const token = await own.server();
    const many = await Promise.all(Array.from({ length: 40 }, () => stream("/v1/stream?feeds=user:alice", { token })));
    expect(many.map((s) => s.status)).toEqual(Array(40).fill(200));
    const reads = await Promise.all(Array.from({ length: 5 }, () => http("GET", "/v1/feeds/user/alice", { token })));
    expect(reads.map((r) => r.status)).toEqual(Array(5).fill(200));
  });

  it("a client that never reads is reset (consumer_too_slow) and closed; a second client on the feed gets every event", async () => {
    const feed = `user:slow${randomBytes(3).toString("hex")}`;
    const slow = await stream(`/v1/stream?feeds=${feed}`, { token: server });
    const fast = await stream(`/v1/stream?feeds=${feed}`, { token: server });
    await slow.until("the start", () => slow.frames.length >= 1);
    slow.pause();
    // Large activities (60 KB of custom each) fill the socket buffers, then the 1 MiB queue.
    const big = "x".repeat(60_000);
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) {
      ids.push((await post(feed, `note:${i}`, { big })).id);
      if (i % 10 === 9) {
        await fast.until("the fast client keeps up", () => added(fast, feed).length === ids.length, 30_000);
      }
    }
    await fast.until("every event", () => added(fast, feed).length === ids.length, 30_000);
    expect(added(fast, feed).map((e) => e.json.activity.id)).toEqual(ids);
    slow.resume();
    await slow.until("the reset", () => slow.events().some((e) => e.event === "reset"), 30_000);
    await slow.ended;
    const events = slow.events();
    const reset = events[events.length - 1];
    expect(reset?.event).toBe("reset");
    expect(reset?.json).toEqual({ reason: "consumer_too_slow" });
    expect(total(await scrape(), "feeds_stream_resets_total", { reason: "consumer_too_slow" })).toBeGreaterThanOrEqual(1);
    const got = events.filter((e) => e.event === "activity.added").map((e) => e.json.activity.id);
    expect(got.length).toBeLessThan(ids.length);
    expect(got).toEqual(ids.slice(0, got.length));
    // The reset's id is the last event the client got: resuming from it loses nothing.
    expect(reset?.id).toBe(events[events.length - 2]?.id);
    const resumed = await stream(`/v1/stream?feeds=${feed}`, { token: server, headers: { "last-event-id": reset?.id as string } });
    await resumed.until("the rest", () => added(resumed, feed).length === ids.length - got.length, 30_000);
    expect(added(resumed, feed).map((e) => e.json.activity.id)).toEqual(ids.slice(got.length));
  }, 180_000);

  it("a stream ends when the token it opened with expires (the client resumes with a fresh one)", async () => {
    const s = await stream("/v1/stream?feeds=user:alice", { token: await t.user("carol", "6s") });
    expect(s.status).toBe(200);
    const opened = Date.now();
    await s.until("the end", () => s.isEnded(), 20_000);
    expect(Date.now() - opened).toBeGreaterThan(3_000);
    expect(s.events().some((e) => e.event === "reset")).toBe(false);
  }, 30_000);

  it.concurrent("an idle stream gets at least 2 comment frames in 35 s (and outlives the request timeout)", async () => {
    const s = await openStream("/v1/stream?feeds=user:idle", { token: server });
    try {
      await sleep(35_000);
      expect(s.isEnded()).toBe(false);
      expect(s.frames.filter((f) => f.comment !== undefined).length).toBeGreaterThanOrEqual(2);
    } finally {
      s.close();
    }
  }, 60_000);

  it.concurrent("a ticket not used within 60 s has expired: 401", async () => {
    const minted = await http("POST", "/v1/stream/tickets", { token: server, body: { feeds: ["user:idle"] } });
    expect(minted.status).toBe(201);
    await sleep(61_000);
    const s = await openStream(`/v1/stream?feeds=user:idle&ticket=${minted.body.ticket}`);
    expect(s.status).toBe(401);
  }, 90_000);
});
