import { describe, expect, it } from "vitest";
import { envelope, http, newTenant } from "../support/api.js";

const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("objects", () => {
  it("put answers 201 then 200 with the Object; any token reads it; missing is 404", async () => {
    const t = await newTenant();
    const server = await t.server();
    const created = await http("PUT", "/v1/objects/product/p-1", { token: server, body: { custom: { title: "Mug", price: 12.5, tags: ["a"] } } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ type: "product", id: "p-1", custom: { title: "Mug", price: 12.5, tags: ["a"] }, updated_at: expect.stringMatching(isoDate) });
    const replaced = await http("PUT", "/v1/objects/product/p-1", { token: server, body: { custom: { title: "Cup" } } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.custom).toEqual({ title: "Cup" });
    expect(Date.parse(replaced.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.updated_at));

    const byUser = await http("GET", "/v1/objects/product/p-1", { token: await t.user("alice") });
    expect(byUser.status).toBe(200);
    expect(byUser.body).toEqual(replaced.body);
    const byServer = await http("GET", "/v1/objects/product/p-1", { token: server });
    expect(byServer.body).toEqual(replaced.body);

    const missing = await http("GET", "/v1/objects/product/nope", { token: server });
    expect(missing.status).toBe(404);
    expect(envelope(missing).code).toBe("NOT_FOUND");
    expect(envelope(missing).fields).toBeUndefined();
    // Same id, other type: a different object.
    expect((await http("GET", "/v1/objects/article/p-1", { token: server })).status).toBe(404);
  });

  it("validates type, id and custom with fields", async () => {
    const t = await newTenant();
    const server = await t.server();
    const cases: [string, unknown, string][] = [
      [`/v1/objects/${"x".repeat(129)}/a`, { custom: {} }, "type"],
      ["/v1/objects/product/a%20b", { custom: {} }, "id"],
      ["/v1/objects/product/a%3Ab", { custom: {} }, "id"],
      ["/v1/objects/product/ok", { custom: [1, 2] }, "custom"],
      ["/v1/objects/product/ok", { custom: "x" }, "custom"],
      ["/v1/objects/product/ok", {}, "custom"],
      ["/v1/objects/product/ok", { custom: { s: "x".repeat(65 * 1024) } }, "custom"],
    ];
    for (const [path, body, field] of cases) {
      const res = await http("PUT", path, { token: server, body });
      expect(res.status, `${path} ${JSON.stringify(body).slice(0, 40)}`).toBe(400);
      const e = envelope(res);
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.fields?.map((f) => f.path)).toContain(field);
    }
    // Just under the limit is fine.
    const fits = await http("PUT", "/v1/objects/product/big", { token: server, body: { custom: { s: "x".repeat(60 * 1024) } } });
    expect(fits.status).toBe(201);
    expect((await http("GET", "/v1/objects/product/ok", { token: server })).status).toBe(404);
  });

  it("patch sets and unsets paths under custom.", async () => {
    const t = await newTenant();
    const server = await t.server();
    const put = await http("PUT", "/v1/objects/post/1", { token: server, body: { custom: { title: "T", meta: { a: 1, b: 2 }, n: 5 } } });
    const patched = await http("PATCH", "/v1/objects/post/1", {
      token: server,
      body: { set: { "custom.title": "New", "custom.meta.c": { deep: true }, "custom.x.y.z": [1] }, unset: ["custom.meta.a", "custom.n", "custom.none.at.all"] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({
      type: "post",
      id: "1",
      custom: { title: "New", meta: { b: 2, c: { deep: true } }, x: { y: { z: [1] } } },
      updated_at: expect.stringMatching(isoDate),
    });
    expect(Date.parse(patched.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(put.body.updated_at));
    expect((await http("GET", "/v1/objects/post/1", { token: server })).body).toEqual(patched.body);

    const onlyUnset = await http("PATCH", "/v1/objects/post/1", { token: server, body: { unset: ["custom.x"] } });
    expect(onlyUnset.status).toBe(200);
    expect(onlyUnset.body.custom).toEqual({ title: "New", meta: { b: 2, c: { deep: true } } });
    const setNull = await http("PATCH", "/v1/objects/post/1", { token: server, body: { set: { "custom.meta": null } } });
    expect(setNull.body.custom).toEqual({ title: "New", meta: null });

    const missing = await http("PATCH", "/v1/objects/post/404", { token: server, body: { set: { "custom.a": 1 } } });
    expect(missing.status).toBe(404);
    expect(envelope(missing).code).toBe("NOT_FOUND");
  });

  it("patch paths outside custom. are VALIDATION_FAILED naming the path, and change nothing", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/objects/post/1", { token: server, body: { custom: { title: "T", s: "str" } } });
    const cases: [unknown, string][] = [
      [{ set: { title: "x" } }, "set.title"],
      [{ set: { custom: {} } }, "set.custom"],
      [{ set: { "custom.": 1 } }, "set.custom."],
      [{ set: { "custom..a": 1 } }, "set.custom..a"],
      [{ set: { "custom.a.": 1 } }, "set.custom.a."],
      [{ set: { "type": "x" } }, "set.type"],
      [{ unset: ["title"] }, "unset.0"],
      [{ unset: ["custom.title", "id"] }, "unset.1"],
      [{ unset: "custom.title" }, "unset"],
      [{ set: [1] }, "set"],
      [{ set: { "custom.a": 1 }, unset: ["custom.a"] }, "unset.0"],
      [{ set: { "custom.a": 1, "custom.a.b": 2 } }, "set.custom.a.b"],
      [{}, ""],
      [{ custom: { title: "x" } }, ""],
    ];
    for (const [body, field] of cases) {
      const res = await http("PATCH", "/v1/objects/post/1", { token: server, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const e = envelope(res);
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.fields?.map((f) => f.path), JSON.stringify(body)).toContain(field);
    }
    // Below a value that is not an object: the stored data decides, the answer names the path.
    const under = await http("PATCH", "/v1/objects/post/1", { token: server, body: { set: { "custom.s.x": 1, "custom.ok": 1 } } });
    expect(under.status).toBe(400);
    expect(envelope(under).fields).toEqual([{ path: "set.custom.s.x", message: expect.stringContaining("custom.s") }]);
    // Bad paths are rejected before the object is looked up.
    const badMissing = await http("PATCH", "/v1/objects/post/none", { token: server, body: { set: { title: 1 } } });
    expect(badMissing.status).toBe(400);
    // A set over 64 KB fails on set; one within it that grows custom past 64 KB fails on custom.
    const setTooBig = await http("PATCH", "/v1/objects/post/1", {
      token: server,
      body: { set: { "custom.a": "x".repeat(40 * 1024), "custom.b": "y".repeat(40 * 1024) } },
    });
    expect(setTooBig.status).toBe(400);
    expect(envelope(setTooBig).fields?.[0]?.path).toBe("set");
    expect((await http("PATCH", "/v1/objects/post/1", { token: server, body: { set: { "custom.a": "x".repeat(40 * 1024) } } })).status).toBe(200);
    const tooBig = await http("PATCH", "/v1/objects/post/1", { token: server, body: { set: { "custom.b": "y".repeat(40 * 1024) } } });
    expect(tooBig.status).toBe(400);
    expect(envelope(tooBig).fields?.[0]?.path).toBe("custom");
    expect((await http("GET", "/v1/objects/post/1", { token: server })).body.custom).toEqual({ title: "T", s: "str", a: "x".repeat(40 * 1024) });
  });

  it("concurrent patches of one object all land", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/objects/counter/c", { token: server, body: { custom: {} } });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => http("PATCH", "/v1/objects/counter/c", { token: server, body: { set: { [`custom.k${i}`]: i } } })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    const read = await http("GET", "/v1/objects/counter/c", { token: server });
    expect(read.body.custom).toEqual(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, i])));
  });

  it("concurrent first puts of one key: exactly one 201", async () => {
    const t = await newTenant();
    const server = await t.server();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => http("PUT", "/v1/objects/race/r", { token: server, body: { custom: { i } } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
  });

  it("delete answers 204, then the object is gone (404 again)", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/objects/post/d", { token: server, body: { custom: { a: 1 } } });
    const del = await http("DELETE", "/v1/objects/post/d", { token: server });
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expect((await http("GET", "/v1/objects/post/d", { token: server })).status).toBe(404);
    const again = await http("DELETE", "/v1/objects/post/d", { token: server });
    expect(again.status).toBe(404);
    expect(envelope(again).code).toBe("NOT_FOUND");
    // A put after the delete creates it anew.
    expect((await http("PUT", "/v1/objects/post/d", { token: server, body: { custom: {} } })).status).toBe(201);
  });

  it("bulk upsert answers the Objects in order and validates every item", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/objects/song/s1", { token: server, body: { custom: { old: true } } });
    const objects = [
      { type: "song", id: "s1", custom: { title: "One" } },
      { type: "song", id: "s2", custom: {} },
      { type: "album", id: "s1", custom: { n: 1 } },
      { type: "song", id: "s2", custom: { title: "Two, again" } },
    ];
    const res = await http("POST", "/v1/objects/bulk", { token: server, body: { objects } });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual(objects.map((o) => ({ ...o, updated_at: expect.stringMatching(isoDate) })));
    const read = await http("GET", "/v1/objects?refs=song:s1,song:s2,album:s1", { token: server });
    expect(read.body.objects["song:s1"].custom).toEqual({ title: "One" });
    // Items naming one object apply in order: the last wins.
    expect(read.body.objects["song:s2"].custom).toEqual({ title: "Two, again" });
    expect(read.body.objects["album:s1"].custom).toEqual({ n: 1 });

    const bad = await http("POST", "/v1/objects/bulk", {
      token: server,
      body: { objects: [{ type: "song", id: "s3", custom: {} }, { type: "song", id: "bad id", custom: {} }, { type: "song", id: "s4" }] },
    });
    expect(bad.status).toBe(400);
    const e = envelope(bad);
    expect(e.code).toBe("VALIDATION_FAILED");
    expect(e.fields?.map((f) => f.path)).toEqual(["objects.1.id", "objects.2.custom"]);
    // Nothing of a rejected call is written.
    expect((await http("GET", "/v1/objects/song/s3", { token: server })).status).toBe(404);

    for (const body of [{}, { objects: [] }, { objects: "x" }, { objects: Array.from({ length: 101 }, (_, i) => ({ type: "a", id: `${i}`, custom: {} })) }]) {
      const r = await http("POST", "/v1/objects/bulk", { token: server, body });
      expect(r.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(envelope(r).fields?.[0]?.path).toBe("objects");
    }
    const hundred = await http("POST", "/v1/objects/bulk", {
      token: server,
      body: { objects: Array.from({ length: 100 }, (_, i) => ({ type: "a", id: `${i}`, custom: { i } })) },
    });
    expect(hundred.status).toBe(200);
    expect(hundred.body.results.map((o: { id: string }) => o.id)).toEqual(Array.from({ length: 100 }, (_, i) => `${i}`));
  });

  it("read many by refs: missing refs absent, any token, at most 100 refs of type:id", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/objects/product/a", { token: server, body: { custom: { n: 1 } } });
    await http("PUT", "/v1/objects/user.list/b@x", { token: server, body: { custom: { n: 2 } } });
    const res = await http("GET", "/v1/objects?refs=product:a,product:missing,user.list:b@x,product:a", { token: await t.user("u1") });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.objects).sort()).toEqual(["product:a", "user.list:b@x"]);
    expect(res.body.objects["product:a"]).toEqual({ type: "product", id: "a", custom: { n: 1 }, updated_at: expect.stringMatching(isoDate) });
    const none = await http("GET", "/v1/objects?refs=product:zzz", { token: server });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ objects: {} });

    const hundred = Array.from({ length: 100 }, (_, i) => `product:${i}`).join(",");
    expect((await http("GET", `/v1/objects?refs=${hundred}`, { token: server })).status).toBe(200);
    for (const q of ["", "?refs=", "?refs=product", "?refs=product:a,,product:b", "?refs=a:b:c", "?refs=pro%20duct:a", `?refs=${hundred},product:x`]) {
      const r = await http("GET", `/v1/objects${q}`, { token: server });
      expect(r.status, q.slice(0, 40)).toBe(400);
      const e = envelope(r);
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.fields?.[0]?.path).toBe("refs");
    }
  });

  it("batch import: envelope rules, per-item failures, idempotent rerun", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (const body of [
      {},
      { objects: [] },
      { objects: "x" },
      { objects: [1] },
      { objects: [{ type: "a", id: "1", custom: {} }, null] },
      { objects: Array.from({ length: 101 }, (_, i) => ({ type: "a", id: `${i}`, custom: {} })) },
    ]) {
      const res = await http("POST", "/v1/batch/objects", { token: server, body });
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
      expect(envelope(res).fields?.[0]?.path).toMatch(/^objects/);
    }
    const items = [
      { type: "book", id: "b1", custom: { title: "One" } },
      { type: "book", id: "bad id", custom: {} },
      { type: "book", id: "b2" },
      { id: "b3", custom: {} },
      { type: "book", id: "b4", custom: [1] },
      { type: "book", id: "b5", custom: { s: "x".repeat(65 * 1024) } },
      { type: "magazine", id: "b1", custom: { n: 2 } },
    ];
    const res = await http("POST", "/v1/batch/objects", { token: server, body: { objects: items } });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { index: 0, ok: true },
      { index: 1, ok: false, code: "VALIDATION_FAILED" },
      { index: 2, ok: false, code: "VALIDATION_FAILED" },
      { index: 3, ok: false, code: "VALIDATION_FAILED" },
      { index: 4, ok: false, code: "VALIDATION_FAILED" },
      { index: 5, ok: false, code: "VALIDATION_FAILED" },
      { index: 6, ok: true },
    ]);
    const rerun = await http("POST", "/v1/batch/objects", { token: server, body: { objects: items } });
    expect(rerun.status).toBe(200);
    expect(rerun.body).toEqual(res.body);
    const read = await http("GET", "/v1/objects?refs=book:b1,book:b2,book:b5,magazine:b1", { token: server });
    expect(read.body.objects).toEqual({
      "book:b1": { type: "book", id: "b1", custom: { title: "One" }, updated_at: expect.stringMatching(isoDate) },
      "magazine:b1": { type: "magazine", id: "b1", custom: { n: 2 }, updated_at: expect.stringMatching(isoDate) },
    });
  });

  it("writes are server only (user tokens 403), reads open to any token, no token 401", async () => {
    const t = await newTenant();
    const server = await t.server();
    const user = await t.user("alice");
    await http("PUT", "/v1/objects/post/1", { token: server, body: { custom: { a: 1 } } });
    const writes: [string, string, unknown][] = [
      ["PUT", "/v1/objects/post/1", { custom: { hacked: true } }],
      ["PUT", "/v1/objects/post/new", { custom: {} }],
      ["PATCH", "/v1/objects/post/1", { set: { "custom.hacked": true } }],
      ["DELETE", "/v1/objects/post/1", undefined],
      ["POST", "/v1/objects/bulk", { objects: [{ type: "post", id: "1", custom: {} }] }],
      ["POST", "/v1/batch/objects", { objects: [{ type: "post", id: "1", custom: {} }] }],
    ];
    for (const [method, path, body] of writes) {
      const res = await http(method, path, { token: user, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
      const anonymous = await http(method, path, { body });
      expect(anonymous.status, `${method} ${path}`).toBe(401);
    }
    expect((await http("GET", "/v1/objects/post/1", { token: user })).body.custom).toEqual({ a: 1 });
    expect((await http("GET", "/v1/objects?refs=post:1", { token: user })).body.objects["post:1"].custom).toEqual({ a: 1 });
    expect((await http("GET", "/v1/objects/post/1")).status).toBe(401);
    expect((await http("GET", "/v1/objects/post/new", { token: server })).status).toBe(404);
  });

  it("another tenant sees none of it", async () => {
    const a = await newTenant();
    const b = await newTenant();
    const sa = await a.server();
    const sb = await b.server();
    await http("PUT", "/v1/objects/post/shared", { token: sa, body: { custom: { owner: "a" } } });
    await http("POST", "/v1/batch/objects", { token: sa, body: { objects: [{ type: "post", id: "batched", custom: {} }] } });
    expect((await http("GET", "/v1/objects/post/shared", { token: sb })).status).toBe(404);
    expect((await http("GET", "/v1/objects/post/shared", { token: await b.user("alice") })).status).toBe(404);
    expect((await http("GET", "/v1/objects?refs=post:shared,post:batched", { token: sb })).body).toEqual({ objects: {} });
    expect((await http("PATCH", "/v1/objects/post/shared", { token: sb, body: { set: { "custom.owner": "b" } } })).status).toBe(404);
    expect((await http("DELETE", "/v1/objects/post/shared", { token: sb })).status).toBe(404);
    // The same key on tenant b is its own object.
    expect((await http("PUT", "/v1/objects/post/shared", { token: sb, body: { custom: { owner: "b" } } })).status).toBe(201);
    expect((await http("GET", "/v1/objects/post/shared", { token: sa })).body.custom).toEqual({ owner: "a" });
    expect((await http("GET", "/v1/objects/post/shared", { token: sb })).body.custom).toEqual({ owner: "b" });
  });

  it("the routes are in the OpenAPI document", async () => {
    const res = await http("GET", "/openapi.json");
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining(["/v1/objects/{type}/{id}", "/v1/objects", "/v1/objects/bulk", "/v1/batch/objects"]),
    );
    expect(Object.keys(res.body.paths["/v1/objects/{type}/{id}"]).sort()).toEqual(["delete", "get", "patch", "put"]);
  });
});
