import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats, newEvent, publishEvents, type FeedEvent, type Nats } from "@feeds/kit";
import { ServerClient, UserClient } from "@feeds/node";
import { envelope, freshRateWindow, http, newTenant, queueDrained, react, tenantWithActivity, type RawAnswer, type TestTenant } from "../support/api.js";
import { until } from "../support/until.js";

// Notification groups (issue 23) through the gateway: what groups (follows of one feed, reactions
// of one kind on one activity, comments on one activity, replies to one comment), the 24-hour
// window, moves to the top, the members' pages, marks by group and their effect on the flat
// counts, exact counts under concurrency, ownership and validation. Reactions, comments and
// follows go through their real routes; the window test publishes reaction events to the notify
// queue as the engagement service does, with the act times it needs.

const KEY = /^[0-9a-f]{32}$/;
const HOUR = 3_600_000;

const groupsOf = (token: string, query = "") => http("GET", `/v1/notifications/groups${query}`, { token });
const membersOf = (token: string, key: string, query = "") => http("GET", `/v1/notifications/groups/${key}/members${query}`, { token });
const markGroups = (token: string, body: unknown) => http("POST", "/v1/notifications/groups/mark", { token, body });
const flat = (token: string, query = "") => http("GET", `/v1/notifications${query}`, { token });
const comment = (token: string, activityId: string, body: unknown) => http("POST", `/v1/activities/${activityId}/comments`, { token, body });
const ok = <T = any>(res: RawAnswer<T>, status = 200): T => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

/** Until `owner`'s groups (server token) satisfy `done`; answers the first page (limit 100). */
const groupsWhen = (server: string, owner: string, what: string, done: (page: any) => boolean) =>
  until(what, async () => {
    const page = ok(await groupsOf(server, `?owner=${owner}&limit=100`));
    return done(page) ? page : undefined;
  }, 20_000);

/** Until `owner` has `n` notifications in all (so every group counts every member). */
const notified = (server: string, owner: string, n: number) =>
  until(`${n} notifications of ${owner}`, async () => {
    const page = ok(await flat(server, `?owner=${owner}&limit=100`));
    return page.results.length >= n ? page : undefined;
  }, 20_000);

let nats: Nats;
beforeAll(async () => {
  nats = await connectNats({ NATS_URL: inject("natsUrl"), FEEDS_NAMESPACE: inject("namespace") }, "notification-groups-test");
});
afterAll(async () => {
  await nats?.close();
});

async function likes(server: string, activityId: string, users: string[], kind = "like") {
  for (const u of users) ok(await react(server, activityId, { kind, user_id: u }), 201);
}

describe("grouping", () => {
  it("groups follows of one feed, reactions of one kind on one activity, comments on one activity and replies to one comment", async () => {
    const { t, server, activity } = await tenantWithActivity();
    ok(await http("PUT", "/v1/users/ann", { token: server, body: { custom: { name: "Ann" } } }), 201);
    const other = ok(await http("POST", "/v1/feeds/user/owner/activities", { token: server, body: { actor: "user:owner", verb: "post", object: "note:2" } }), 201);
    const parent = ok(await comment(server, activity.id, { text: "mine", user_id: "owner" }), 201); // own act: no notification

    ok(await http("POST", "/v1/feeds/timeline/f1/follows", { token: server, body: { target: "user:owner", activity_copy_limit: 0 } }), 201);
    ok(await http("POST", "/v1/feeds/timeline/f2/follows", { token: server, body: { target: "user:owner", activity_copy_limit: 0 } }), 201);
    await likes(server, activity.id, ["ann", "bob", "cat"]);
    await likes(server, activity.id, ["ann", "bob"], "love");
    for (const u of ["bob", "cat"]) ok(await comment(server, activity.id, { text: `hi ${u}`, user_id: u }), 201);
    for (const u of ["dan", "eve", "dan"]) ok(await comment(server, activity.id, { text: `re ${u}`, user_id: u, parent_id: parent.id }), 201);
    await likes(server, other.id, ["ann"]);
    await notified(server, "owner", 2 + 3 + 2 + 2 + 3 + 1);
    await queueDrained("notify");

    const page = await groupsWhen(server, "owner", "6 groups", (p) => p.results.length === 6);
    const summary = page.results.map((g: any) => [g.verb, g.reaction_kind, g.object, g.activity_id, g.activity_count, g.actor_count]);
    // Newest update first: the order of the last members.
    expect(summary).toEqual([
      ["react", "like", other.id, null, 1, 1],
      ["comment", null, parent.id, activity.id, 3, 2],
      ["comment", null, activity.id, activity.id, 2, 2],
      ["react", "love", activity.id, null, 2, 2],
      ["react", "like", activity.id, null, 3, 3],
      ["follow", null, "user:owner", null, 2, 2],
    ]);
    expect(page).toMatchObject({ next: null, unseen: 6, unread: 6 });
    expect(new Set(page.results.map((g: any) => g.group_key)).size).toBe(6);

    // One group in full: actors most recent first (users with a record show it), latest members newest first in the flat shape.
    const liked = page.results[4];
    const members = ok(await flat(server, "?owner=owner&limit=100")).results.filter((n: any) => n.verb === "react" && n.reaction_kind === "like" && n.object === activity.id);
    expect(liked).toEqual({
      group_key: expect.stringMatching(KEY),
      verb: "react",
      reaction_kind: "like",
      object: activity.id,
      activity_id: null,
      activity_count: 3,
      actor_count: 3,
      actors: [
        { id: "cat", custom: {} },
        { id: "bob", custom: {} },
        { id: "ann", custom: { name: "Ann" } },
      ],
      latest: members,
      first_at: members[2].created_at,
      updated_at: members[0].created_at,
      seen_at: null,
      read_at: null,
    });
    expect(members.map((n: any) => n.actor)).toEqual(["user:cat", "user:bob", "user:ann"]);
    // The reply group: two distinct actors, dan most recent.
    expect(page.results[1].actors.map((a: any) => a.id)).toEqual(["dan", "eve"]);

    // A user token reads its own groups; the same answer.
    const own = ok(await groupsOf(await t.user("owner"), "?limit=100"));
    expect(own.results.map((g: any) => g.group_key)).toEqual(page.results.map((g: any) => g.group_key));
  });

  it("actors and latest show at most 5, most recent first, while the counts count every member", async () => {
    const { server, activity } = await tenantWithActivity();
    const users = Array.from({ length: 7 }, (_, i) => `u${i}`);
    await likes(server, activity.id, users);
    const page = await groupsWhen(server, "owner", "7 likes", (p) => p.results[0]?.activity_count === 7);
    const [g] = page.results;
    expect(g).toMatchObject({ activity_count: 7, actor_count: 7 });
    expect(g.actors.map((a: any) => a.id)).toEqual(["u6", "u5", "u4", "u3", "u2"]);
    expect(g.latest.map((n: any) => n.actor)).toEqual(["user:u6", "user:u5", "user:u4", "user:u3", "user:u2"]);
  });
});

describe("a page's shown members", () => {
  it("a busy group does not crowd another out of its 5 actors and 5 latest members", async () => {
    const { server, activity } = await tenantWithActivity();
    const other = ok(await http("POST", "/v1/feeds/user/owner/activities", { token: server, body: { actor: "user:owner", verb: "post", object: "note:2" } }), 201);
    await likes(server, other.id, ["b0", "b1", "b2", "b3", "b4"]);
    await likes(server, activity.id, Array.from({ length: 7 }, (_, i) => `a${i}`));
    const page = await groupsWhen(server, "owner", "7 and 5", (p) => p.results.map((g: any) => g.activity_count).join() === "7,5");
    const two = ok(await groupsOf(server, "?owner=owner&limit=2"));
    expect(two.results).toEqual(page.results);
    const [busy, quiet] = two.results;
    expect(busy.latest.map((n: any) => n.actor)).toEqual(["user:a6", "user:a5", "user:a4", "user:a3", "user:a2"]);
    expect(quiet.latest.map((n: any) => n.actor)).toEqual(["user:b4", "user:b3", "user:b2", "user:b1", "user:b0"]);
    expect(quiet.actors.map((a: any) => a.id)).toEqual(["b4", "b3", "b2", "b1", "b0"]);
  });
});

describe("the 24-hour window", () => {
  // The window runs on the acts' times (`created_at`), which the notify worker takes from the
  // events: the test publishes reaction events with act times in the past, as the engagement
  // service would publish for reactions made then.
  function reactionAt(t: TestTenant, activityId: string, by: string, at: Date): FeedEvent {
    const data = { id: randomUUID(), activity_id: activityId, user_id: by, kind: "like", created_at: at.toISOString() };
    return newEvent("reaction.added", t.id, data, { at, meta: { activity_actor: "user:owner", actor: `user:${by}` } });
  }

  it("a group collects for 24 hours from its first member; the next member after that opens a new group", async () => {
    const t = await newTenant();
    const server = await t.server();
    const activityId = randomUUID();
    const t0 = Date.now() - 50 * HOUR;
    const acts: [string, number][] = [
      ["a", t0],
      ["b", t0 + 23 * HOUR], // within the first group's 24 hours
      ["c", t0 + 24 * HOUR], // 24 hours after the first member: a new group
      ["d", t0 + 47 * HOUR], // within the second group's
      ["e", t0 + 48 * HOUR + 1], // past it: a third
    ];
    // One at a time: which group is collecting depends on what came before.
    for (const [by, at] of acts) {
      await publishEvents(nats, [reactionAt(t, activityId, by, new Date(at))]);
      await queueDrained("notify");
    }
    const page = await groupsWhen(server, "owner", "3 groups", (p) => p.results.length === 3);
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(page.results.map((g: any) => [g.actors.map((a: any) => a.id), g.activity_count, g.first_at, g.updated_at])).toEqual([
      [["e"], 1, iso(t0 + 48 * HOUR + 1), iso(t0 + 48 * HOUR + 1)],
      [["d", "c"], 2, iso(t0 + 24 * HOUR), iso(t0 + 47 * HOUR)],
      [["b", "a"], 2, iso(t0), iso(t0 + 23 * HOUR)],
    ]);
  });
});

describe("moves to the top", () => {
  it("a new member moves its group to the top and makes it unseen and unread again", async () => {
    const { server, activity } = await tenantWithActivity();
    await likes(server, activity.id, ["ann"]);
    ok(await comment(server, activity.id, { text: "hi", user_id: "bob" }), 201);
    const before = await groupsWhen(server, "owner", "2 groups", (p) => p.results.length === 2);
    const [commented, liked] = before.results;
    expect([commented.verb, liked.verb]).toEqual(["comment", "react"]);

    expect(ok(await markGroups(server, { read: true, owner: "owner" }))).toEqual({ unseen: 0, unread: 0 });
    const marked = ok(await groupsOf(server, "?owner=owner"));
    for (const g of marked.results) expect(g.seen_at !== null && g.read_at !== null, JSON.stringify(g)).toBe(true);

    await likes(server, activity.id, ["cat"]);
    const after = await groupsWhen(server, "owner", "the like group on top", (p) => p.results[0]?.group_key === liked.group_key);
    expect(after.results.map((g: any) => [g.group_key, g.activity_count, g.seen_at === null, g.read_at === null])).toEqual([
      [liked.group_key, 2, true, true],
      [commented.group_key, 1, false, false],
    ]);
    expect(after).toMatchObject({ unseen: 1, unread: 1 });
    expect(Date.parse(after.results[0].updated_at)).toBeGreaterThan(Date.parse(liked.updated_at));
  });

  it("pages of groups walk every group once, newest update first", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (let i = 0; i < 5; i++) {
      const a = ok(await http("POST", "/v1/feeds/user/owner/activities", { token: server, body: { actor: "user:owner", verb: "post", object: `note:${i}` } }), 201);
      await likes(server, a.id, ["ann"]);
    }
    await groupsWhen(server, "owner", "5 groups", (p) => p.results.length === 5);
    const seen: any[] = [];
    let next: string | null = null;
    do {
      const page: any = ok(await groupsOf(server, `?owner=owner&limit=2${next ? `&next=${encodeURIComponent(next)}` : ""}`));
      expect(page.results.length).toBeLessThanOrEqual(2);
      seen.push(...page.results);
      next = page.next;
    } while (next);
    expect(seen).toHaveLength(5);
    expect(new Set(seen.map((g) => g.group_key)).size).toBe(5);
    const times = seen.map((g) => Date.parse(g.updated_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });
});

describe("members", () => {
  it("pages every notification of a group, newest first, and only the owner's", async () => {
    const { t, server, activity } = await tenantWithActivity();
    await likes(server, activity.id, Array.from({ length: 7 }, (_, i) => `m${i}`));
    ok(await comment(server, activity.id, { text: "not a like", user_id: "zed" }), 201);
    const page = await groupsWhen(server, "owner", "the like group", (p) => p.results.some((g: any) => g.activity_count === 7));
    const key = page.results.find((g: any) => g.verb === "react").group_key;

    const walked: any[] = [];
    const sizes: number[] = [];
    let next: string | null = null;
    do {
      const res: any = ok(await membersOf(server, key, `?owner=owner&limit=3${next ? `&next=${encodeURIComponent(next)}` : ""}`));
      sizes.push(res.results.length);
      walked.push(...res.results);
      next = res.next;
    } while (next);
    expect(sizes).toEqual([3, 3, 1]);
    const likesFlat = ok(await flat(server, "?owner=owner&limit=100")).results.filter((n: any) => n.verb === "react");
    expect(walked).toEqual(likesFlat);
    expect(walked.map((n: any) => n.actor)).toEqual(Array.from({ length: 7 }, (_, i) => `user:m${6 - i}`));

    // The owner's user token reads them too; another user's token finds no such group of theirs.
    expect(ok(await membersOf(await t.user("owner"), key, "?limit=100")).results).toHaveLength(7);
    const theirs = await membersOf(await t.user("m1"), key);
    expect(theirs.status).toBe(404);
    expect(envelope(theirs).code).toBe("NOT_FOUND");
    expect((await membersOf(server, key, "?owner=m1")).status).toBe(404);
    expect((await membersOf(server, "0".repeat(32), "?owner=owner")).status).toBe(404);
  });
});

describe("marks", () => {
  it("marking groups marks their members: exact group counts, and the flat counts drop by the members set", async () => {
    const { server, activity } = await tenantWithActivity();
    await likes(server, activity.id, ["a", "b", "c"]);
    for (const u of ["a", "b"]) ok(await comment(server, activity.id, { text: "hi", user_id: u }), 201);
    ok(await http("POST", "/v1/feeds/timeline/f/follows", { token: server, body: { target: "user:owner", activity_copy_limit: 0 } }), 201);
    const page = await groupsWhen(server, "owner", "3 groups of 6", (p) => p.results.reduce((s: number, g: any) => s + g.activity_count, 0) === 6);
    const key = (verb: string) => page.results.find((g: any) => g.verb === verb).group_key as string;
    const [likeKey, commentKey, followKey] = [key("react"), key("comment"), key("follow")];
    expect(page).toMatchObject({ unseen: 3, unread: 3 });
    const flatCounts = async () => {
      const f = ok(await flat(server, "?owner=owner&limit=1"));
      return { unseen: f.unseen, unread: f.unread };
    };
    expect(await flatCounts()).toEqual({ unseen: 6, unread: 6 });

    expect(ok(await markGroups(server, { seen: [likeKey], owner: "owner" }))).toEqual({ unseen: 2, unread: 3 });
    expect(await flatCounts()).toEqual({ unseen: 3, unread: 6 });
    expect(ok(await markGroups(server, { read: [commentKey], owner: "owner" }))).toEqual({ unseen: 1, unread: 2 });
    expect(await flatCounts()).toEqual({ unseen: 1, unread: 4 });
    // Marking again changes nothing; another owner's group is ignored.
    expect(ok(await markGroups(server, { read: [commentKey], seen: [likeKey], owner: "owner" }))).toEqual({ unseen: 1, unread: 2 });
    expect(ok(await markGroups(server, { read: [followKey], owner: "someone" }))).toEqual({ unseen: 0, unread: 0 });
    expect(await flatCounts()).toEqual({ unseen: 1, unread: 4 });

    // The flat mark keeps groups in step: reading the follow by its notification id reads its group.
    const follow = ok(await flat(server, "?owner=owner&limit=100")).results.find((n: any) => n.verb === "follow");
    ok(await http("POST", "/v1/notifications/mark", { token: server, body: { read: [follow.id], owner: "owner" } }));
    const after = ok(await groupsOf(server, "?owner=owner"));
    expect(after).toMatchObject({ unseen: 0, unread: 1 });
    const byKey = new Map(after.results.map((g: any) => [g.group_key, g]));
    const state = (k: string) => {
      const g: any = byKey.get(k);
      return [g.seen_at !== null, g.read_at !== null];
    };
    expect([state(likeKey), state(commentKey), state(followKey)]).toEqual([
      [true, false],
      [true, true],
      [true, true],
    ]);
    // Every member of a marked group is marked.
    const members = ok(await membersOf(server, likeKey, "?owner=owner")).results;
    expect(members.map((n: any) => [n.seen_at !== null, n.read_at])).toEqual([
      [true, null],
      [true, null],
      [true, null],
    ]);

    expect(ok(await markGroups(server, { read: true, owner: "owner" }))).toEqual({ unseen: 0, unread: 0 });
    expect(await flatCounts()).toEqual({ unseen: 0, unread: 0 });
  });
});

describe("exact counts under concurrency", () => {
  it("20 reactions sent at once make one group with activity_count 20 and actor_count 20", async () => {
    const { server, activity } = await tenantWithActivity();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => react(server, activity.id, { kind: "like", user_id: `c${i}` })));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(201);
    await notified(server, "owner", 20);
    await queueDrained("notify");
    const page = ok(await groupsOf(server, "?owner=owner"));
    expect(page.results.map((g: any) => [g.activity_count, g.actor_count])).toEqual([[20, 20]]);
    expect(page).toMatchObject({ unseen: 1, unread: 1 });
  });

  it("one user liking, unliking and liking again makes activity_count 2, actor_count 1", async () => {
    const { server, activity } = await tenantWithActivity();
    ok(await react(server, activity.id, { kind: "like", user_id: "fan" }), 201);
    ok(await http("DELETE", `/v1/activities/${activity.id}/reactions/like?user_id=fan`, { token: server }), 204);
    ok(await react(server, activity.id, { kind: "like", user_id: "fan" }), 201);
    await notified(server, "owner", 2);
    await queueDrained("notify");
    const page = ok(await groupsOf(server, "?owner=owner"));
    expect(page.results.map((g: any) => [g.activity_count, g.actor_count, g.actors])).toEqual([[2, 1, [{ id: "fan", custom: {} }]]]);
  });
});

describe("auth and validation", () => {
  it("no token 401; a user token naming an owner 403; a server token without one 400", async () => {
    const t = await newTenant();
    const server = await t.server();
    const user = await t.user("alice");
    const key = "a".repeat(32);
    for (const res of [
      await http("GET", "/v1/notifications/groups"),
      await http("GET", `/v1/notifications/groups/${key}/members`),
      await http("POST", "/v1/notifications/groups/mark", { body: { seen: true } }),
    ])
      expect(res.status).toBe(401);
    for (const res of [await groupsOf(user, "?owner=alice"), await membersOf(user, key, "?owner=bob"), await markGroups(user, { seen: true, owner: "alice" })]) {
      expect(res.status).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
    }
    for (const res of [await groupsOf(server), await membersOf(server, key), await markGroups(server, { seen: true })]) {
      expect(res.status).toBe(400);
      expect((envelope(res).fields ?? []).map((f) => f.path)).toContain("owner");
    }
  });

  it("malformed input answers 400 VALIDATION_FAILED naming the field", async () => {
    const t = await newTenant();
    const user = await t.user("alice");
    const bad = async (res: RawAnswer, path: string) => {
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
      expect((envelope(res).fields ?? []).map((f) => f.path).join(",")).toContain(path);
    };
    await bad(await groupsOf(user, "?limit=101"), "limit");
    await bad(await groupsOf(user, "?limit=0"), "limit");
    await bad(await groupsOf(user, "?next=garbage!"), "next");
    await bad(await groupsOf(user, `?next=${Buffer.from(JSON.stringify([1, "x"])).toString("base64url")}`), "next");
    await bad(await membersOf(user, "not-a-key"), "group_key");
    await bad(await membersOf(user, "A".repeat(32)), "group_key");
    await bad(await membersOf(user, "a".repeat(32), "?next=%00"), "next");
    await bad(await markGroups(user, {}), "");
    await bad(await markGroups(user, { seen: ["nothex"] }), "seen");
    await bad(await markGroups(user, { read: false }), "read");
    await bad(await markGroups(user, { seen: Array.from({ length: 101 }, (_, i) => i.toString(16).padStart(32, "0")) }), "seen");
    await bad(await markGroups(await t.server(), { seen: true, owner: "bad owner!" }), "owner");
  });
});

describe("rate weight", () => {
  it("a grouped page counts 3 in the caller's rate window (it reads every shown group's actors and members); the flat page 1", async () => {
    const t = await newTenant({ rate_limit_per_minute: 1000 });
    const user = await t.user("alice");
    await freshRateWindow();
    const remaining = (a: RawAnswer) => Number(a.headers.get("ratelimit-remaining"));
    const r0 = remaining(await flat(user));
    const r1 = remaining(await groupsOf(user));
    const r2 = remaining(await flat(user));
    expect([r0 - r1, r1 - r2]).toEqual([3, 1]);
  });
});

describe("the SDK", () => {
  it("notificationGroups, notificationGroupMembers, markNotificationGroups and their iterators, answers validated against the contract", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const creds = { baseUrl: inject("baseUrl"), apiKey: t.apiKey, apiSecret: t.apiSecret, validateResponses: true };
    const sdk = new ServerClient(creds);
    const owner = new UserClient({ ...creds, userId: "owner" });
    await likes(server, activity.id, ["ann", "bob", "cat"]);
    ok(await comment(server, activity.id, { text: "hi", user_id: "ann" }), 201);
    await until("2 groups of 4", async () => {
      const p = await owner.notificationGroups();
      return p.results.reduce((n, g) => n + g.activity_count, 0) === 4 ? p : undefined;
    }, 20_000);
    const first = await sdk.notificationGroups({ owner: "owner", limit: 1 });
    expect(first.results).toHaveLength(1);
    expect(first).toMatchObject({ unseen: 2, unread: 2, next: expect.any(String) });
    const all = [];
    for await (const g of owner.allNotificationGroups({ limit: 1 })) all.push(g);
    expect(all.map((g) => g.verb)).toEqual(["comment", "react"]);
    const liked = all[1]?.group_key ?? "";
    const members = [];
    for await (const n of sdk.allNotificationGroupMembers(liked, { owner: "owner", limit: 2 })) members.push(n.actor);
    expect(members).toEqual(["user:cat", "user:bob", "user:ann"]);
    expect((await owner.notificationGroupMembers(liked, { limit: 1 })).results).toHaveLength(1);
    expect(await owner.markNotificationGroups({ read: [liked] })).toEqual({ unseen: 1, unread: 1 });
    expect(await sdk.markNotificationGroups({ seen: true, owner: "owner" })).toEqual({ unseen: 0, unread: 1 });
  });
});
