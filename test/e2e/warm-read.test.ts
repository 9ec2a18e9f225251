import { describe, expect, it } from "vitest";
import { http, newTenant } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";

// A warm first page asks MongoDB nothing: the gateway process counts every command its driver
// starts, by the route it ran for (kit metrics, command monitoring), and the figure for the feed
// read route does not move over warm reads of a page with an actor user, refs, objects and
// promoted records.

const ROUTE = "GET /v1/feeds/:group/:id";
const commandsOfRoute = async (work = ROUTE) => total(await scrape(), "feeds_mongodb_commands_total", { work });

describe("warm first page", () => {
  it("issues no database command once warm (server token: actor users, objects, promoted)", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("PUT", "/v1/users/alice", { token: server, body: { custom: { name: "Alice" } } })).status).toBe(201);
    expect((await http("PUT", "/v1/objects/product/p1", { token: server, body: { custom: { price: 5 } } })).status).toBe(201);
    expect((await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:x", verb: "promote", object: "product:p1" } })).status).toBe(201);
    for (let i = 0; i < 5; i++) {
      const add = await http("POST", "/v1/feeds/user/alice/activities", {
        token: server,
        body: { actor: "user:alice", verb: "post", object: `note:${i}`, refs: ["product:p1"] },
      });
      expect(add.status).toBe(201);
    }
    const read = () => http("GET", "/v1/feeds/user/alice?limit=20", { token: server });
    // Cold reads fill the head, the activity cache and the read caches.
    for (let i = 0; i < 2; i++) expect((await read()).status).toBe(200);
    const before = await commandsOfRoute();
    for (let i = 0; i < 20; i++) {
      const page = await read();
      expect(page.status).toBe(200);
      expect(page.body.results).toHaveLength(5);
      expect(page.body.results[0].actor_user).toEqual({ id: "alice", custom: { name: "Alice" } });
      expect(Object.keys(page.body.objects)).toEqual(["product:p1"]);
      expect(page.body.promoted).toHaveLength(1);
    }
    expect(await commandsOfRoute()).toBe(before);
    // The counter counts: a cold page (its head gone) moves it.
    expect(before).toBeGreaterThan(0);
  });

  it("issues no database command once warm (user token: own reactions, reaction counts, promoted for the user)", async () => {
    const t = await newTenant();
    const server = await t.server();
    const bob = await t.user("bob");
    for (const id of ["alice", "bob"]) expect((await http("PUT", `/v1/users/${id}`, { token: server, body: { custom: { name: id } } })).status).toBe(201);
    // One promoted record for every read, one for bob only, one for someone else.
    const promote = (audience?: { users: string[] }) =>
      http("POST", "/v1/promoted", { token: server, body: { actor: "brand:x", verb: "promote", object: "product:p1", ...(audience ? { audience } : {}) } });
    for (const a of [undefined, { users: ["bob"] }, { users: ["carol"] }]) expect((await promote(a)).status).toBe(201);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const add = await http("POST", "/v1/feeds/user/alice/activities", { token: server, body: { actor: "user:alice", verb: "post", object: `note:${i}` } });
      expect(add.status).toBe(201);
      ids.push(add.body.id);
    }
    expect((await http("POST", "/v1/feeds/timeline/bob/follows", { token: server, body: { target: "user:alice" } })).status).toBe(201);
    // Bob likes the two newest, alice loves the newest: own reactions on some activities, none on others.
    for (const id of ids.slice(3)) expect((await http("POST", `/v1/activities/${id}/reactions`, { token: bob, body: { kind: "like" } })).status).toBe(201);
    expect((await http("POST", `/v1/activities/${ids[4]}/reactions`, { token: server, body: { kind: "love", user_id: "alice" } })).status).toBe(201);

    const read = () => http("GET", "/v1/feeds/timeline/bob?limit=20", { token: bob });
    // The follow copies alice's history in the background.
    for (let i = 0; (await read()).body.results?.length !== 5; i++) {
      expect(i).toBeLessThan(100);
      await new Promise((r) => setTimeout(r, 100));
    }
    for (let i = 0; i < 2; i++) expect((await read()).status).toBe(200);
    const before = await commandsOfRoute();
    for (let i = 0; i < 20; i++) {
      const page = await read();
      expect(page.status).toBe(200);
      expect(page.body.results.map((a: { id: string }) => a.id)).toEqual([...ids].reverse());
      expect(page.body.results.map((a: { own_reactions: string[] }) => a.own_reactions)).toEqual([["like"], ["like"], [], [], []]);
      expect(page.body.results[0].reaction_counts).toEqual({ like: 1, love: 1 });
      expect(page.body.results[0].actor_user).toEqual({ id: "alice", custom: { name: "alice" } });
      expect(page.body.promoted).toHaveLength(2);
    }
    expect(await commandsOfRoute()).toBe(before);
  });

  it("a warm notification page asks MongoDB for its page only (counts from the signal, actor users from the read cache)", async () => {
    const t = await newTenant();
    const server = await t.server();
    const alice = await t.user("alice");
    for (const id of ["alice", "bob", "carol"]) expect((await http("PUT", `/v1/users/${id}`, { token: server, body: { custom: { name: id } } })).status).toBe(201);
    for (const id of ["bob", "carol"]) {
      expect((await http("POST", `/v1/feeds/timeline/${id}/follows`, { token: server, body: { target: "user:alice", activity_copy_limit: 0 } })).status).toBe(201);
    }
    const read = () => http("GET", "/v1/notifications?limit=20", { token: alice });
    for (let i = 0; (await read()).body.unseen !== 2; i++) {
      expect(i).toBeLessThan(100);
      await new Promise((r) => setTimeout(r, 100));
    }
    for (let i = 0; i < 2; i++) expect((await read()).status).toBe(200);
    const before = await commandsOfRoute("GET /v1/notifications");
    for (let i = 0; i < 10; i++) {
      const page = await read();
      expect(page.body).toMatchObject({ unseen: 2, unread: 2 });
      expect(page.body.results.map((n: { actor_user: { id: string } }) => n.actor_user.id).sort()).toEqual(["bob", "carol"]);
    }
    expect(await commandsOfRoute("GET /v1/notifications")).toBe(before + 10);
  });
});
