import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { envelope, http, newTenant } from "../support/api.js";

const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("promoted activities", () => {
  it("create answers 201 with the record; list shows it newest first; retract keeps it listed", async () => {
    const t = await newTenant();
    const server = await t.server();
    const created = await http("POST", "/v1/promoted", {
      token: server,
      body: { actor: "brand:acme", verb: "promote", object: "product:mug", custom: { headline: "Mugs!", n: 2 } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(uuid),
      actor: "brand:acme",
      verb: "promote",
      object: "product:mug",
      custom: { headline: "Mugs!", n: 2 },
      promoted: true,
      audience: null,
      served_count: 0,
      created_at: expect.stringMatching(isoDate),
      retracted_at: null,
    });
    const targeted = await http("POST", "/v1/promoted", {
      token: server,
      body: { actor: "brand:acme", verb: "promote", object: "product:cup", audience: { users: ["bob", "bob"], feeds: ["timeline:alice"] } },
    });
    expect(targeted.status).toBe(201);
    expect(targeted.body).toMatchObject({ custom: {}, audience: { users: ["bob"], feeds: ["timeline:alice"] }, served_count: 0 });

    const list = await http("GET", "/v1/promoted", { token: server });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ results: [targeted.body, created.body], next: null });

    const retracted = await http("DELETE", `/v1/promoted/${created.body.id}`, { token: server });
    expect(retracted.status).toBe(204);
    expect(retracted.body).toBeUndefined();
    const again = await http("DELETE", `/v1/promoted/${created.body.id}`, { token: server });
    expect(again.status).toBe(404);
    expect(envelope(again).code).toBe("NOT_FOUND");

    const after = await http("GET", "/v1/promoted", { token: server });
    expect(after.body.results).toHaveLength(2);
    const row = after.body.results.find((r: { id: string }) => r.id === created.body.id);
    expect(row).toEqual({ ...created.body, retracted_at: expect.stringMatching(isoDate) });
    expect(Date.parse(row.retracted_at)).toBeGreaterThanOrEqual(Date.parse(created.body.created_at));
    expect(after.body.results.find((r: { id: string }) => r.id === targeted.body.id)).toEqual(targeted.body);
  });

  it("pages with limit and next (cursor is the deprecated alias), and validates both", async () => {
    const t = await newTenant();
    const server = await t.server();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:acme", verb: "promote", object: `product:${i}` } });
      ids.push(res.body.id);
    }
    const p1 = await http("GET", "/v1/promoted?limit=2", { token: server });
    expect(p1.body.results.map((r: { object: string }) => r.object)).toEqual(["product:4", "product:3"]);
    expect(typeof p1.body.next).toBe("string");
    const p2 = await http("GET", `/v1/promoted?limit=2&cursor=${p1.body.next}`, { token: server });
    expect(p2.body.results.map((r: { object: string }) => r.object)).toEqual(["product:2", "product:1"]);
    const p3 = await http("GET", `/v1/promoted?limit=2&next=${p2.body.next}&cursor=garbage`, { token: server });
    expect(p3.body).toMatchObject({ results: [{ id: ids[0] }], next: null });

    for (const q of ["limit=0", "limit=101", "limit=x", "next=%21%21", "next=bm90IGEgY3Vyc29y"]) {
      const res = await http("GET", `/v1/promoted?${q}`, { token: server });
      expect(res.status, q).toBe(400);
      const e = envelope(res);
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.fields?.[0]?.path, q).toBe(q.split("=")[0]);
    }
  });

  it("refuses user tokens on create, list and retract with 403", async () => {
    const t = await newTenant();
    const created = await http("POST", "/v1/promoted", { token: await t.server(), body: { actor: "brand:a", verb: "promote", object: "p:1" } });
    const user = await t.user("alice");
    const answers = [
      await http("POST", "/v1/promoted", { token: user, body: { actor: "brand:a", verb: "promote", object: "p:1" } }),
      await http("GET", "/v1/promoted", { token: user }),
      await http("DELETE", `/v1/promoted/${created.body.id}`, { token: user }),
      // Refused before the body or id is looked at.
      await http("POST", "/v1/promoted", { token: user, body: {} }),
      await http("DELETE", "/v1/promoted/not-a-uuid", { token: user }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
    }
    expect((await http("GET", "/v1/promoted", { token: "garbage" })).status).toBe(401);
    // The record is still live.
    expect((await http("GET", "/v1/promoted", { token: await t.server() })).body.results[0].retracted_at).toBeNull();
  });

  it("validates the body with fields", async () => {
    const t = await newTenant();
    const server = await t.server();
    const ok = { actor: "brand:acme", verb: "promote", object: "product:1" };
    const cases: [unknown, string][] = [
      [{ verb: "v", object: "o" }, "actor"],
      [{ ...ok, verb: "" }, "verb"],
      [{ ...ok, verb: "v".repeat(65) }, "verb"],
      [{ ...ok, actor: "a".repeat(257) }, "actor"],
      [{ ...ok, object: "o".repeat(257) }, "object"],
      [{ ...ok, object: 7 }, "object"],
      [{ ...ok, custom: [1] }, "custom"],
      [{ ...ok, custom: { s: "x".repeat(65 * 1024) } }, "custom"],
      [{ ...ok, audience: "everyone" }, "audience"],
      [{ ...ok, audience: {} }, "audience"],
      [{ ...ok, audience: { users: [], feeds: [] } }, "audience"],
      [{ ...ok, audience: { users: ["ok", "not ok"] } }, "audience.users.1"],
      [{ ...ok, audience: { feeds: ["user:x", "nocolon"] } }, "audience.feeds.1"],
      [{ ...ok, audience: { feeds: ["bad-group:x"] } }, "audience.feeds.0"],
      [{ ...ok, audience: { users: Array.from({ length: 1001 }, (_, i) => `u${i}`) } }, "audience.users"],
    ];
    for (const [body, field] of cases) {
      const res = await http("POST", "/v1/promoted", { token: server, body });
      expect(res.status, `${JSON.stringify(body).slice(0, 60)}`).toBe(400);
      const e = envelope(res);
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.fields?.map((f) => f.path), JSON.stringify(body).slice(0, 60)).toContain(field);
    }
    expect((await http("GET", "/v1/promoted", { token: server })).body).toEqual({ results: [], next: null });
    // Limits themselves are fine; a null audience is no audience.
    const edge = await http("POST", "/v1/promoted", {
      token: server,
      body: { actor: "a".repeat(256), verb: "v".repeat(64), object: "o".repeat(256), custom: { s: "x".repeat(60 * 1024) }, audience: null },
    });
    expect(edge.status).toBe(201);
    expect(edge.body.audience).toBeNull();
  });

  it("retract: unknown and non-UUID ids are 404; an upper-case UUID names the record", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (const id of [randomUUID(), "not-a-uuid", "x".repeat(300)]) {
      const res = await http("DELETE", `/v1/promoted/${id}`, { token: server });
      expect(res.status, id.slice(0, 40)).toBe(404);
      expect(envelope(res).code).toBe("NOT_FOUND");
    }
    const created = await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:a", verb: "promote", object: "p:1" } });
    expect((await http("DELETE", `/v1/promoted/${created.body.id.toUpperCase()}`, { token: server })).status).toBe(204);
    expect((await http("DELETE", `/v1/promoted/${created.body.id}`, { token: server })).status).toBe(404);
  });

  it("concurrent retracts: exactly one succeeds", async () => {
    const t = await newTenant();
    const server = await t.server();
    const created = await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:a", verb: "promote", object: "p:1" } });
    const answers = await Promise.all(Array.from({ length: 5 }, () => http("DELETE", `/v1/promoted/${created.body.id}`, { token: server })));
    expect(answers.map((a) => a.status).sort()).toEqual([204, 404, 404, 404, 404]);
  });

  it("a second tenant sees none of it", async () => {
    const a = await newTenant();
    const b = await newTenant();
    const created = await http("POST", "/v1/promoted", { token: await a.server(), body: { actor: "brand:a", verb: "promote", object: "p:1" } });
    const bServer = await b.server();
    expect((await http("GET", "/v1/promoted", { token: bServer })).body).toEqual({ results: [], next: null });
    const res = await http("DELETE", `/v1/promoted/${created.body.id}`, { token: bServer });
    expect(res.status).toBe(404);
    expect((await http("GET", "/v1/promoted", { token: await a.server() })).body.results).toEqual([created.body]);
  });

  it("is in the OpenAPI document", async () => {
    const doc = await http("GET", "/openapi.json");
    expect(Object.keys(doc.body.paths["/v1/promoted"])).toEqual(expect.arrayContaining(["get", "post"]));
    expect(Object.keys(doc.body.paths["/v1/promoted/{id}"])).toEqual(["delete"]);
  });

  it("the sidecar: first pages only, eligible records, never in results, counted in served_count", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (let i = 0; i < 3; i++) {
      await http("POST", "/v1/feeds/user/reader/activities", { token: server, body: { actor: "user:reader", verb: "post", object: `note:${i}` } });
    }
    const everyone = await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:1", verb: "promote", object: "ad:1", custom: { x: 1 } } });
    const forFeed = await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:1", verb: "promote", object: "ad:2", audience: { feeds: ["user:reader"] } } });
    const forUser = await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:1", verb: "promote", object: "ad:3", audience: { users: ["vip"] } } });
    const elsewhere = await http("POST", "/v1/promoted", { token: server, body: { actor: "brand:1", verb: "promote", object: "ad:4", audience: { feeds: ["user:other"] } } });
    for (const p of [everyone, forFeed, forUser, elsewhere]) expect(p.status).toBe(201);

    const first = await http("GET", "/v1/feeds/user/reader?limit=2", { token: server });
    expect(first.status).toBe(200);
    expect(first.body.results).toHaveLength(2);
    const ids = (first.body.promoted as { id: string }[]).map((p) => p.id).sort();
    expect(ids).toEqual([everyone.body.id, forFeed.body.id].sort());
    expect(first.body.promoted.find((p: { id: string }) => p.id === everyone.body.id)).toEqual({
      id: everyone.body.id,
      actor: "brand:1",
      verb: "promote",
      object: "ad:1",
      custom: { x: 1 },
      promoted: true,
    });
    const resultIds = first.body.results.map((a: { id: string }) => a.id);
    for (const id of ids) expect(resultIds).not.toContain(id);
    // Later pages carry no sidecar at all.
    const second = await http("GET", `/v1/feeds/user/reader?limit=2&next=${first.body.next}`, { token: server });
    expect(second.body.results).toHaveLength(1);
    expect(second.body).not.toHaveProperty("promoted");
    // A user in the audience sees the user-targeted record.
    const vip = await http("GET", "/v1/feeds/user/reader", { token: await t.user("vip") });
    expect((vip.body.promoted as { id: string }[]).map((p) => p.id)).toContain(forUser.body.id);
    // Retracted: gone from the next read.
    expect((await http("DELETE", `/v1/promoted/${everyone.body.id}`, { token: server })).status).toBe(204);
    const after = await http("GET", "/v1/feeds/user/reader", { token: server });
    expect((after.body.promoted as { id: string }[]).map((p) => p.id)).toEqual([forFeed.body.id]);
    // served_count: `everyone` was delivered twice (server read, vip read), within seconds.
    const deadline = Date.now() + 10_000;
    let count = 0;
    while (Date.now() < deadline) {
      const list = await http("GET", "/v1/promoted?limit=100", { token: server });
      count = list.body.results.find((r: { id: string }) => r.id === everyone.body.id)?.served_count ?? 0;
      if (count === 2) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(count).toBe(2);
  });
});
