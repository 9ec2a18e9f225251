import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http, newTenant, type TestTenant, queueDrained } from "../support/api.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";
import { until } from "../support/until.js";

// The social half end to end, through the real routes only: follows, reactions, comments and
// replies made over HTTP notify exactly whom the contract names (never the actor itself), and a
// tenant's webhook destination receives every follow, reaction and comment event, signed.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

async function notificationsOf(server: string, owner: string): Promise<any[]> {
  const res = await http("GET", `/v1/notifications?owner=${owner}&limit=100`, { token: server });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.results;
}

const drained = () => queueDrained("notify", { timeoutMs: 20_000 });

async function setUp(t: TestTenant) {
  const server = await t.server();
  for (const id of ["alice", "bob", "carol"]) {
    expect((await http("PUT", `/v1/users/${id}`, { token: server, body: { custom: { name: id } } })).status).toBe(201);
  }
  const post = await http("POST", "/v1/feeds/user/alice/activities", { token: server, body: { actor: "user:alice", verb: "post", object: "note:1" } });
  expect(post.status).toBe(201);
  return { server, activity: post.body.id as string };
}

describe("social acts over HTTP", () => {
  it("notify the owners the contract names, with the act's actor and object, never the actor itself", async () => {
    const t = await newTenant();
    const { server, activity } = await setUp(t);
    const [alice, bob, carol] = await Promise.all(["alice", "bob", "carol"].map((u) => t.user(u)));
    // bob follows alice, reacts and comments; carol replies to bob; alice acts on her own things.
    expect((await http("POST", "/v1/feeds/user/bob/follows", { token: bob, body: { target: "user:alice" } })).status).toBe(201);
    const reaction = await http("POST", `/v1/activities/${activity}/reactions`, { token: bob, body: { kind: "like" } });
    expect(reaction.status).toBe(201);
    const comment = await http("POST", `/v1/activities/${activity}/comments`, { token: bob, body: { text: "nice" } });
    expect(comment.status).toBe(201);
    const reply = await http("POST", `/v1/activities/${activity}/comments`, { token: carol, body: { text: "agreed", parent_id: comment.body.id } });
    expect(reply.status).toBe(201);
    expect((await http("POST", `/v1/activities/${activity}/reactions`, { token: alice, body: { kind: "like" } })).status).toBe(201);
    expect((await http("POST", `/v1/activities/${activity}/comments`, { token: alice, body: { text: "thanks" } })).status).toBe(201);
    const ownReply = await http("POST", `/v1/activities/${activity}/comments`, { token: bob, body: { text: "me too", parent_id: comment.body.id } });
    expect(ownReply.status).toBe(201);

    const toAlice = await until("alice's three notifications", async () => {
      const got = await notificationsOf(server, "alice");
      return got.length >= 3 ? got : undefined;
    }, 20_000);
    await drained();
    const actorUser = (id: string) => ({ id, custom: { name: id } });
    expect(await notificationsOf(server, "alice")).toHaveLength(3);
    expect(toAlice.map((n) => [n.verb, n.actor, n.object, n.reaction_kind, n.activity_id])).toEqual([
      ["comment", "user:bob", comment.body.id, null, activity],
      ["react", "user:bob", activity, "like", null],
      ["follow", "user:bob", "user:alice", null, null],
    ]);
    expect(toAlice.every((n) => JSON.stringify(n.actor_user) === JSON.stringify(actorUser("bob")))).toBe(true);
    expect(toAlice.map((n) => n.created_at)).toEqual([comment.body.created_at, reaction.body.created_at, expect.any(String)]);
    // The reply notified the parent comment's author only; bob's own reply notified nobody.
    const toBob = await notificationsOf(server, "bob");
    expect(toBob.map((n) => [n.verb, n.actor, n.object, n.activity_id])).toEqual([["comment", "user:carol", reply.body.id, activity]]);
    expect(await notificationsOf(server, "carol")).toEqual([]);
  });

  it("deliver every follow, reaction and comment event to the tenant's destination, signed", async () => {
    const t = await newTenant();
    const { server, activity } = await setUp(t);
    const dest = await http("POST", "/v1/webhooks", {
      token: server,
      body: { url: receiver.url("/social"), events: ["follow.created", "follow.deleted", "reaction.added", "reaction.deleted", "comment.added", "comment.deleted"] },
    });
    expect(dest.status).toBe(201);
    receiver.secret("/social", dest.body.signing_secret);
    const bob = await t.user("bob");
    expect((await http("POST", "/v1/feeds/user/bob/follows", { token: bob, body: { target: "user:alice" } })).status).toBe(201);
    expect((await http("DELETE", "/v1/feeds/user/bob/follows/user/alice", { token: bob })).status).toBe(204);
    const reaction = await http("POST", `/v1/activities/${activity}/reactions`, { token: bob, body: { kind: "like" } });
    expect((await http("DELETE", `/v1/activities/${activity}/reactions/like`, { token: bob })).status).toBe(204);
    const comment = await http("POST", `/v1/activities/${activity}/comments`, { token: bob, body: { text: "hi" } });
    expect((await http("DELETE", `/v1/comments/${comment.body.id}`, { token: bob })).status).toBe(204);

    const types = ["follow.created", "follow.deleted", "reaction.added", "reaction.deleted", "comment.added", "comment.deleted"];
    const got = await receiver.waitFor("one of each social event", () => {
      const events = receiver.delivered("/social").map((r) => r.event);
      return types.every((ty) => events.some((e) => e.type === ty)) ? events : undefined;
    });
    await drained();
    await sleep(300);
    // Each once, verified (a failed verification leaves no event), with the resource as data.
    expect(receiver.delivered("/social").map((r) => r.event.type).sort()).toEqual([...types].sort());
    expect(receiver.requests.filter((r) => r.path === "/social").every((r) => r.event !== null)).toBe(true);
    const byType = (ty: string) => got.find((e) => e.type === ty).data;
    expect(byType("follow.created")).toMatchObject({ source_group: "user", source_id: "bob", target_group: "user", target_id: "alice" });
    expect(byType("reaction.added")).toEqual(reaction.body);
    expect(byType("comment.added")).toMatchObject({ id: comment.body.id, activity_id: activity, user_id: "bob", text: "hi" });
  });
});
