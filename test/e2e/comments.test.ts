import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FeedsApiError, ServerClient, UserClient } from "@feeds/node";
import { baseUrl, envelope, http, newTenant, type TestTenant } from "../support/api.js";
import { until } from "../support/until.js";

// Comments and one level of replies through the gateway: oldest-first pages with ties by id,
// reply_count, edited_at, the author rules, the replies route's 404s, the parent rules, the
// tenant blocklist (422 CONTENT_REJECTED, whole words, case-insensitive), deletes, and events.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


async function setUp(): Promise<{ t: TestTenant; server: string; activity: any }> {
  const t = await newTenant();
  const server = await t.server();
  const res = await http("POST", "/v1/feeds/user/owner/activities", { token: server, body: { actor: "user:owner", verb: "post", object: "note:1" } });
  expect(res.status).toBe(201);
  return { t, server, activity: res.body };
}

const comment = (token: string, activityId: string, body: unknown) => http("POST", `/v1/activities/${activityId}/comments`, { token, body });
/** Asserts 201 and answers the Reply. */
async function commented(token: string, activityId: string, body: unknown): Promise<any> {
  const res = await comment(token, activityId, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}
const getComment = async (token: string, activityId: string, id: string) =>
  (await listAll(token, `/v1/activities/${activityId}/comments`, 100)).find((c) => c.id === id);

/** Every item of a paged list, following `next`. */
async function listAll(token: string, path: string, limit: number): Promise<any[]> {
  const out: any[] = [];
  let next: string | null = null;
  do {
    const res: { status: number; body: any } = await http("GET", `${path}?limit=${limit}${next ? `&next=${encodeURIComponent(next)}` : ""}`, { token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results.length).toBeLessThanOrEqual(limit);
    out.push(...res.body.results);
    next = res.body.next;
  } while (next);
  return out;
}

const oldestFirst = (list: any[]) => [...list].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || (a.id < b.id ? -1 : 1));

describe("comments and replies", () => {
  let nc: NatsConnection;
  const events: any[] = [];
  beforeAll(async () => {
    nc = await connect({ servers: inject("natsUrl") });
    const sub = nc.subscribe(`${inject("namespace")}.notify.event`);
    void (async () => {
      for await (const m of sub) events.push(JSON.parse(new TextDecoder().decode(m.data)));
    })();
  });
  afterAll(async () => {
    await nc?.drain();
  });

  it("a comment answers the Reply shape; top-level comments list oldest first in pages without loss or repeats", async () => {
    const { t, server, activity } = await setUp();
    const fan = await t.user("fan");
    const first = await commented(fan, activity.id, { text: "first!" });
    expect(first).toEqual({
      id: expect.stringMatching(UUID),
      activity_id: activity.id,
      parent_id: null,
      user_id: "fan",
      text: "first!",
      reply_count: 0,
      created_at: expect.stringMatching(ISO),
      edited_at: null,
    });
    const made = [first];
    for (let i = 0; i < 6; i++) made.push(await commented(server, activity.id, { text: `c${i}`, user_id: `u${i}` }));
    made.push(...(await Promise.all(Array.from({ length: 6 }, (_, i) => commented(server, activity.id, { text: `p${i}`, user_id: `p${i}` })))));
    const listed = await listAll(fan, `/v1/activities/${activity.id}/comments`, 4);
    expect(listed).toEqual(oldestFirst(made));
    // Comment counts are not reactions.
    expect((await http("GET", `/v1/activities/${activity.id}`, { token: server })).body).toMatchObject({ reaction_counts: {}, version: 1 });
  });

  it("ties in created_at are broken by id, across pages", async () => {
    const { t, server, activity } = await setUp();
    const at = new Date(Date.now() - 60_000);
    const ids = Array.from({ length: 5 }, () => randomUUID()).sort();
    const mongo = new MongoClient(inject("mongoUrl"));
    try {
      // Five comments of one millisecond, stored in an order unlike their ids.
      await mongo.db(inject("namespace")).collection("comments").insertMany(
        [ids[3], ids[0], ids[4], ids[2], ids[1]].map((id) => ({
          _id: id as never,
          tenant_id: t.id,
          activity_id: activity.id,
          parent_id: null,
          user_id: "u",
          text: "tie",
          reply_count: 0,
          created_at: at,
          edited_at: null,
          deleted_at: null,
        })),
      );
    } finally {
      await mongo.close();
    }
    const later = await commented(server, activity.id, { text: "later", user_id: "u" });
    const listed = await listAll(server, `/v1/activities/${activity.id}/comments`, 2);
    expect(listed.map((c) => c.id)).toEqual([...ids, later.id]);
  });

  it("replies: one level, oldest first, reply_count exact under concurrency; a parent that is a reply, of another activity or unknown: 400", async () => {
    const { t, server, activity } = await setUp();
    const fan = await t.user("fan");
    const parent = await commented(fan, activity.id, { text: "parent" });
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => commented(server, activity.id, { text: `r${i}`, user_id: `u${i}`, parent_id: parent.id })));
    for (const r of replies) expect(r).toMatchObject({ parent_id: parent.id, activity_id: activity.id, reply_count: 0 });
    expect(await getComment(fan, activity.id, parent.id)).toMatchObject({ reply_count: 12 });
    expect(await listAll(fan, `/v1/comments/${parent.id}/replies`, 5)).toEqual(oldestFirst(replies));
    // Replies added and deleted at once: reply_count still equals the replies.
    const mixed = await Promise.all([
      ...replies.slice(0, 8).map((r) => http("DELETE", `/v1/comments/${r.id}?user_id=${r.user_id}`, { token: server })),
      ...Array.from({ length: 16 }, (_, i) => comment(server, activity.id, { text: `m${i}`, user_id: `m${i}`, parent_id: parent.id })),
    ]);
    expect(mixed.map((r) => r.status)).toEqual([...Array(8).fill(204), ...Array(16).fill(201)]);
    expect(await getComment(fan, activity.id, parent.id)).toMatchObject({ reply_count: 20 });
    expect(await listAll(fan, `/v1/comments/${parent.id}/replies`, 100)).toHaveLength(20);
    // Replies are not top-level comments.
    expect((await listAll(fan, `/v1/activities/${activity.id}/comments`, 100)).map((c) => c.id)).toEqual([parent.id]);

    const other = await setUpActivity(server, "user:other");
    const foreign = await commented(server, other.id, { text: "elsewhere", user_id: "x" });
    for (const parentId of [replies[0].id, foreign.id, randomUUID(), "not-a-uuid"]) {
      const bad = await comment(fan, activity.id, { text: "hi", parent_id: parentId });
      expect(bad.status, parentId).toBe(400);
      expect(envelope(bad)).toMatchObject({ code: "VALIDATION_FAILED", fields: [{ path: "parent_id" }] });
    }
    expect(await getComment(fan, activity.id, parent.id)).toMatchObject({ reply_count: 20 });
  });

  it("the replies route answers 404 for a missing comment, a reply's id, and a comment of a soft-deleted activity", async () => {
    const { server, activity } = await setUp();
    const parent = await commented(server, activity.id, { text: "parent", user_id: "a" });
    const reply = await commented(server, activity.id, { text: "reply", user_id: "b", parent_id: parent.id });
    expect((await http("GET", `/v1/comments/${parent.id}/replies`, { token: server })).status).toBe(200);
    for (const id of [randomUUID(), "nope", reply.id]) {
      const res = await http("GET", `/v1/comments/${id}/replies`, { token: server });
      expect(res.status, id).toBe(404);
      expect(envelope(res).code).toBe("NOT_FOUND");
    }
    expect((await http("DELETE", `/v1/activities/${activity.id}`, { token: server })).status).toBe(204);
    expect((await http("GET", `/v1/comments/${parent.id}/replies`, { token: server })).status).toBe(404);
    expect((await http("GET", `/v1/activities/${activity.id}/comments`, { token: server })).status).toBe(404);
    expect((await comment(server, activity.id, { text: "late", user_id: "a" })).status).toBe(404);
    expect((await http("PATCH", `/v1/comments/${parent.id}`, { token: server, body: { text: "x", user_id: "a" } })).status).toBe(404);
    expect((await http("DELETE", `/v1/comments/${parent.id}?user_id=a`, { token: server })).status).toBe(404);
  });

  it("edit and delete by the author only: other users 403, server tokens name the author (missing 400, another user 403); edited_at set", async () => {
    const { t, server, activity } = await setUp();
    const [fan, other] = await Promise.all([t.user("fan"), t.user("other")]);
    const c = await commented(fan, activity.id, { text: "typo" });
    const patch = (token: string, body: unknown) => http("PATCH", `/v1/comments/${c.id}`, { token, body });
    expect((await patch(other, { text: "mine now" })).status).toBe(403);
    expect((await patch(fan, { text: "x", user_id: "other" })).status).toBe(403);
    const noUser = await patch(server, { text: "x" });
    expect(noUser.status).toBe(400);
    expect(envelope(noUser).fields?.map((f) => f.path)).toEqual(["user_id"]);
    expect((await patch(server, { text: "x", user_id: "other" })).status).toBe(403);
    expect((await patch(fan, { text: "" })).status).toBe(400);
    expect((await patch(fan, { text: "   " })).status).toBe(400);
    expect((await patch(fan, { text: "x".repeat(5001) })).status).toBe(400);
    const edited = await patch(fan, { text: "fixed" });
    expect(edited.status).toBe(200);
    expect(edited.body).toEqual({ ...c, text: "fixed", edited_at: expect.stringMatching(ISO) });
    const again = await patch(server, { text: "fixed again", user_id: "fan" });
    expect(again.status).toBe(200);
    expect(Date.parse(again.body.edited_at)).toBeGreaterThanOrEqual(Date.parse(edited.body.edited_at));
    expect(await getComment(fan, activity.id, c.id)).toEqual(again.body);
    expect((await http("PATCH", `/v1/comments/${randomUUID()}`, { token: fan, body: { text: "x" } })).status).toBe(404);

    expect((await http("DELETE", `/v1/comments/${c.id}`, { token: other })).status).toBe(403);
    expect((await http("DELETE", `/v1/comments/${c.id}`, { token: server })).status).toBe(400);
    expect((await http("DELETE", `/v1/comments/${c.id}?user_id=other`, { token: server })).status).toBe(403);
    expect((await http("DELETE", `/v1/comments/${c.id}?user_id=fan`, { token: server })).status).toBe(204);
    expect((await http("DELETE", `/v1/comments/${c.id}`, { token: fan })).status).toBe(404);
    expect(await getComment(fan, activity.id, c.id)).toBeUndefined();
    // 5000 characters are allowed.
    expect((await comment(fan, activity.id, { text: "y".repeat(5000) })).status).toBe(201);
  });

  it("deleting a reply lowers its parent's reply_count; deleting a comment takes its replies with it", async () => {
    const { server, activity } = await setUp();
    const parent = await commented(server, activity.id, { text: "parent", user_id: "a" });
    const r1 = await commented(server, activity.id, { text: "r1", user_id: "b", parent_id: parent.id });
    const r2 = await commented(server, activity.id, { text: "r2", user_id: "c", parent_id: parent.id });
    expect(await getComment(server, activity.id, parent.id)).toMatchObject({ reply_count: 2 });
    expect((await http("DELETE", `/v1/comments/${r1.id}?user_id=b`, { token: server })).status).toBe(204);
    expect(await getComment(server, activity.id, parent.id)).toMatchObject({ reply_count: 1 });
    expect((await listAll(server, `/v1/comments/${parent.id}/replies`, 10)).map((r) => r.id)).toEqual([r2.id]);
    expect((await http("DELETE", `/v1/comments/${parent.id}?user_id=a`, { token: server })).status).toBe(204);
    expect((await http("GET", `/v1/comments/${parent.id}/replies`, { token: server })).status).toBe(404);
    // The reply went with it.
    expect((await http("PATCH", `/v1/comments/${r2.id}`, { token: server, body: { text: "x", user_id: "c" } })).status).toBe(404);
    expect((await http("DELETE", `/v1/comments/${r2.id}?user_id=c`, { token: server })).status).toBe(404);
    expect((await comment(server, activity.id, { text: "orphan", user_id: "d", parent_id: parent.id })).status).toBe(400);
    expect(await listAll(server, `/v1/activities/${activity.id}/comments`, 10)).toEqual([]);
  });

  it("the blocklist rejects whole words case-insensitively (422) on comments, replies and edits; a substring passes", async () => {
    const { t, server, activity } = await setUp();
    const fan = await t.user("fan");
    expect((await http("PUT", "/v1/moderation/blocklist", { token: fan, body: { terms: ["x"] } })).status).toBe(403);
    const put = await http("PUT", "/v1/moderation/blocklist", { token: server, body: { terms: ["  Darn ", "heck", "darn", "foul play", "c++"] } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ terms: ["c++", "darn", "foul play", "heck"] });
    expect((await http("GET", "/v1/moderation/blocklist", { token: server })).body).toEqual(put.body);
    expect((await http("GET", "/v1/moderation/blocklist", { token: fan })).status).toBe(403);

    const parent = await commented(fan, activity.id, { text: "clean" });
    for (const text of ["darn", "Oh DARN it", "what the HeCk!", "(darn)", "a foul  play here", "I like C++."]) {
      for (const res of [
        await comment(fan, activity.id, { text }),
        await comment(fan, activity.id, { text, parent_id: parent.id }),
        await http("PATCH", `/v1/comments/${parent.id}`, { token: fan, body: { text } }),
      ]) {
        expect(res.status, text).toBe(422);
        expect(envelope(res).code).toBe("CONTENT_REJECTED");
      }
    }
    for (const text of ["darned", "heckle", "undarn", "foul", "play", "C+"]) {
      expect((await comment(fan, activity.id, { text })).status, text).toBe(201);
    }
    expect(await getComment(fan, activity.id, parent.id)).toMatchObject({ text: "clean", edited_at: null, reply_count: 0 });
    // Another tenant's list is its own.
    const elsewhere = await setUp();
    expect((await comment(elsewhere.server, elsewhere.activity.id, { text: "darn", user_id: "z" })).status).toBe(201);
    // Bad lists: 400.
    for (const terms of [[""], ["   "], ["x".repeat(101)], Array(1001).fill("a"), "darn"]) {
      expect((await http("PUT", "/v1/moderation/blocklist", { token: server, body: { terms } })).status).toBe(400);
    }
    // An empty list lifts it.
    expect((await http("PUT", "/v1/moderation/blocklist", { token: server, body: { terms: [] } })).body).toEqual({ terms: [] });
    expect((await comment(fan, activity.id, { text: "darn" })).status).toBe(201);
  });

  it("publishes comment.added (replies name the parent's author) and comment.deleted", async () => {
    const { t, server, activity } = await setUp();
    const fan = await t.user("fan");
    const parent = await commented(fan, activity.id, { text: "parent" });
    const reply = await commented(server, activity.id, { text: "reply", user_id: "bob", parent_id: parent.id });
    expect((await http("DELETE", `/v1/comments/${reply.id}?user_id=bob`, { token: server })).status).toBe(204);
    // Other producers publish for this tenant too (activity.added, user.updated): the comment events only.
    const mine = () => events.filter((e) => e.tenant_id === t.id && e.type.startsWith("comment."));
    await until("three events", async () => (mine().length >= 3 ? true : undefined), 10_000);
    await sleep(300);
    expect(mine()).toEqual([
      { id: expect.stringMatching(UUID), type: "comment.added", tenant_id: t.id, created_at: parent.created_at, data: parent, meta: { activity_actor: "user:owner", actor: "user:fan" } },
      {
        id: expect.stringMatching(UUID),
        type: "comment.added",
        tenant_id: t.id,
        created_at: reply.created_at,
        data: reply,
        meta: { activity_actor: "user:owner", actor: "user:bob", parent_user_id: "fan" },
      },
      {
        id: expect.stringMatching(UUID),
        type: "comment.deleted",
        tenant_id: t.id,
        created_at: expect.stringMatching(ISO),
        data: reply,
        meta: { activity_actor: "user:owner", actor: "user:bob", parent_user_id: "fan" },
      },
    ]);
  });
});

describe("the SDK's reaction, comment and blocklist methods", () => {
  it("reach the routes with the shapes they answer", async () => {
    const { t, activity } = await setUp();
    const creds = { baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret, validateResponses: true };
    const server = new ServerClient(creds);
    const fan = new UserClient({ ...creds, userId: "fan" });
    const like = await fan.react(activity.id, "like");
    expect(like).toMatchObject({ activity_id: activity.id, user_id: "fan", kind: "like" });
    expect((await server.react(activity.id, "like", { user_id: "fan" })).id).toBe(like.id);
    await server.react(activity.id, "clap", { user_id: "other" });
    expect((await fan.reactions(activity.id, { kind: "like" })).results.map((r) => r.id)).toEqual([like.id]);
    expect((await server.reactions(activity.id, { limit: 1 })).next).not.toBeNull();
    expect((await fan.getActivity(activity.id)).own_reactions).toEqual(["like"]);
    await fan.unreact(activity.id, "like");
    await server.unreact(activity.id, "clap", { user_id: "other" });
    const wow = await fan.react(activity.id, "wow");
    await fan.deleteReaction(wow.id);
    expect(await fan.getActivity(activity.id)).toMatchObject({ reaction_counts: {}, own_reactions: [] });

    const c = await fan.addComment(activity.id, { text: "hello" });
    const r = await server.addComment(activity.id, { text: "hi back", parent_id: c.id, user_id: "bob" });
    expect((await fan.comments(activity.id)).results).toEqual([{ ...c, reply_count: 1 }]);
    expect((await fan.replies(c.id)).results).toEqual([r]);
    expect((await fan.editComment(c.id, "hello!")).edited_at).not.toBeNull();
    expect((await server.editComment(r.id, "hi!", { user_id: "bob" })).text).toBe("hi!");
    await server.deleteComment(r.id, { user_id: "bob" });
    await fan.deleteComment(c.id);
    expect((await fan.comments(activity.id)).results).toEqual([]);

    expect(await server.setBlocklist(["Darn"])).toEqual({ terms: ["darn"] });
    expect(await server.getBlocklist()).toEqual({ terms: ["darn"] });
    const rejected = await fan.addComment(activity.id, { text: "darn" }).catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(FeedsApiError);
    expect(rejected).toMatchObject({ code: "CONTENT_REJECTED", status: 422 });
  });
});

async function setUpActivity(server: string, feed: string): Promise<any> {
  const [group, id] = feed.split(":");
  const res = await http("POST", `/v1/feeds/${group}/${id}/activities`, { token: server, body: { actor: feed, verb: "post", object: "note:2" } });
  expect(res.status).toBe(201);
  return res.body;
}
