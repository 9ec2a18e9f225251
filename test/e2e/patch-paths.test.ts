import { describe, expect, it } from "vitest";
import { envelope, http, newTenant, type RawAnswer } from "../support/api.js";

// Patch paths that name JavaScript's prototype machinery are refused at the edge, naming the
// field, for every patch route; nothing is written and the system keeps serving fresh tokens.

const RESERVED = "must not contain a __proto__, constructor or prototype segment";

/** Bodies that would reach Object.prototype through a walker that follows inherited names. */
const attacks: [body: unknown, field: string][] = [
  [{ set: { "custom.__proto__.audience": "x" } }, "set.custom.__proto__.audience"],
  [{ set: { "custom.__proto__.polluted": "yes" } }, "set.custom.__proto__.polluted"],
  [{ set: { "custom.__proto__": { polluted: "yes" } } }, "set.custom.__proto__"],
  [{ set: { "custom.constructor.prototype.polluted": "yes" } }, "set.custom.constructor.prototype.polluted"],
  [{ set: { "custom.a.prototype": 1 } }, "set.custom.a.prototype"],
  [{ unset: ["custom.__proto__.hasOwnProperty"] }, "unset.0"],
  [{ unset: ["custom.ok", "custom.constructor"] }, "unset.1"],
];

function expectRefused(res: RawAnswer, body: unknown, field: string) {
  expect(res.status, JSON.stringify(body)).toBe(400);
  const e = envelope(res);
  expect(e.code).toBe("VALIDATION_FAILED");
  expect(e.fields, JSON.stringify(body)).toContainEqual({ path: field, message: RESERVED });
}

describe("patch paths never reach a prototype", () => {
  it("activities: a user token patching its own activity gets 400 naming the field; nothing changes", async () => {
    const t = await newTenant();
    const alice = await t.user("alice");
    const added = await http("POST", "/v1/feeds/user/alice/activities", { token: alice, body: { verb: "post", object: "o", custom: { k: 1 } } });
    expect(added.status).toBe(201);
    for (const [body, field] of attacks) {
      expectRefused(await http("PATCH", `/v1/activities/${added.body.id}`, { token: alice, body }), body, field);
    }
    const after = await http("GET", `/v1/activities/${added.body.id}`, { token: alice });
    expect(after.body).toMatchObject({ custom: { k: 1 }, version: 1, edited_at: null });
  });

  it("objects: a server token's patch gets 400 naming the field; nothing changes", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("PUT", "/v1/objects/post/1", { token: server, body: { custom: { k: 1 } } })).status).toBe(201);
    for (const [body, field] of attacks) {
      expectRefused(await http("PATCH", "/v1/objects/post/1", { token: server, body }), body, field);
    }
    expect((await http("GET", "/v1/objects/post/1", { token: server })).body.custom).toEqual({ k: 1 });
  });

  it("inherited names are plain fields: toString and hasOwnProperty are set and unset as data", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/objects/post/2", { token: server, body: { custom: {} } });
    const set = await http("PATCH", "/v1/objects/post/2", { token: server, body: { set: { "custom.toString.x": 1, "custom.hasOwnProperty": 2 } } });
    expect(set.status).toBe(200);
    expect(set.body.custom).toEqual({ toString: { x: 1 }, hasOwnProperty: 2 });
    const unset = await http("PATCH", "/v1/objects/post/2", { token: server, body: { unset: ["custom.hasOwnProperty", "custom.valueOf"] } });
    expect(unset.body.custom).toEqual({ toString: { x: 1 } });

    const alice = await t.user("alice");
    const a = await http("POST", "/v1/feeds/user/alice/activities", { token: alice, body: { verb: "post", object: "o" } });
    const patched = await http("PATCH", `/v1/activities/${a.body.id}`, { token: alice, body: { set: { "custom.toString.x": 1 } } });
    expect(patched.status).toBe(200);
    expect(patched.body.custom).toEqual({ toString: { x: 1 } });
  });

  it("after every attempt the system still serves: fresh tokens of a fresh tenant authenticate and write", async () => {
    const t = await newTenant();
    const alice = await t.user("alice");
    const a = await http("POST", "/v1/feeds/user/alice/activities", { token: alice, body: { verb: "post", object: "o" } });
    for (const [body] of attacks) await http("PATCH", `/v1/activities/${a.body.id}`, { token: alice, body });
    const other = await newTenant();
    const bob = await other.user("bob", "10m");
    const posted = await http("POST", "/v1/feeds/user/bob/activities", { token: bob, body: { verb: "post", object: "fresh" } });
    expect(posted.status, JSON.stringify(posted.body)).toBe(201);
    const server = await other.server();
    expect((await http("PUT", "/v1/objects/post/1", { token: server, body: { custom: { a: 1 } } })).status).toBe(201);
    const read = await http("GET", "/v1/feeds/user/bob", { token: server });
    expect(read.status).toBe(200);
    expect(read.body.results.map((r: { object: string }) => r.object)).toEqual(["fresh"]);
  });
});
