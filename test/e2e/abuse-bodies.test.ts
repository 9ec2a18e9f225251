import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { requestLimits } from "@feeds/node";
import { admitted, envelope, http, newTenant, type RawAnswer } from "../support/api.js";

// Bodies that cost the caller little and the gateway much: a patch of 1,000 paths of ~505
// segments (any user token may send one, before its activity is looked up), `custom` nested
// thousands of levels deep, and 1 MiB of nothing but brackets. Each answers 400 in the envelope,
// naming the field, and never 500.

const { patchSetKeys, customDepth } = requestLimits;
const CUSTOM_DEPTH_RULE = `must be at most ${customDepth} levels deep`;
const SET_DEPTH_RULE = `must leave custom at most ${customDepth} levels deep, the path's own levels included`;
/** Far above what the bounded work takes, far below the seconds the unbounded work took. */
const DEADLINE_MS = 2500;

/** An object `depth` levels deep (`{}` is 1), built without recursion. */
const nested = (depth: number) => {
  let v: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
};
/** The JSON text of `nested(depth)`: this process's own JSON.stringify overflows on thousands of levels. */
const deepJson = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
/** A body whose `"$deep"` string stands for `deepJson(depth)`. */
const withDeep = (body: unknown, depth: number) => JSON.stringify(body).replace('"$deep"', deepJson(depth));

/** ~1 MiB: 1,000 keys of 505 segments, each within the 1,024 characters a path may have. */
const hostileSet = () => {
  const set: Record<string, number> = {};
  for (let i = 0; i < 1000; i++) set[`custom.k${String(i).padStart(3, "0")}.${Array<string>(503).fill("a").join(".")}`] = 1;
  return set;
};

function expectField(res: RawAnswer, path: string, message?: string) {
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(400);
  const e = envelope(res);
  expect(e.code).toBe("VALIDATION_FAILED");
  expect(e.fields?.map((f) => f.path)).toContain(path);
  if (message !== undefined) expect(e.fields).toContainEqual({ path, message });
}

async function timed(call: () => Promise<RawAnswer>): Promise<[RawAnswer, number]> {
  const started = performance.now();
  const res = await call();
  return [res, performance.now() - started];
}

describe("a hostile patch body costs the bounded work only", () => {
  it("1,000 keys of ~505 segments from a user token answer 400 naming set at once: missing activity, someone else's, objects", async () => {
    const t = await newTenant();
    const [alice, mallory, server] = [await t.user("alice"), await t.user("mallory"), await t.server()];
    const added = await http("POST", "/v1/feeds/user/alice/activities", { token: alice, body: { verb: "post", object: "o", custom: { k: 1 } } });
    expect(added.status).toBe(201);
    expect((await http("PUT", "/v1/objects/post/1", { token: server, body: { custom: { k: 1 } } })).status).toBe(201);
    const body = { set: hostileSet() };
    expect(JSON.stringify(body).length).toBeGreaterThan(1_000_000);

    for (const [path, token] of [
      [`/v1/activities/${randomUUID()}`, mallory],
      [`/v1/activities/${added.body.id}`, mallory],
      ["/v1/objects/post/1", server],
    ] as const) {
      const [res, ms] = await timed(() => http("PATCH", path, { token, body }));
      expectField(res, "set", `at most ${patchSetKeys} keys`);
      expect(ms, path).toBeLessThan(DEADLINE_MS);
    }
    expect((await http("GET", `/v1/activities/${added.body.id}`, { token: alice })).body).toMatchObject({ custom: { k: 1 }, version: 1 });
    expect((await http("GET", "/v1/objects/post/1", { token: server })).body.custom).toEqual({ k: 1 });
  });

  it("100 keys of 505 segments answer 400 naming each path by its segment cap", async () => {
    const t = await newTenant();
    const mallory = await t.user("mallory");
    const set = Object.fromEntries(Object.entries(hostileSet()).slice(0, patchSetKeys));
    const [res, ms] = await timed(() => http("PATCH", `/v1/activities/${randomUUID()}`, { token: mallory, body: { set } }));
    expectField(res, `set.${Object.keys(set)[0]}`, `must have at most ${requestLimits.patchPathSegments} segments, custom included`);
    expect(envelope(res).fields).toHaveLength(patchSetKeys);
    expect(ms).toBeLessThan(DEADLINE_MS);
  });
});

describe("deeply nested custom answers 400 naming the field, never 500", () => {
  it("activities: add with 20,000 levels, a patch set value with its path, batch items", async () => {
    const t = await newTenant();
    const [alice, server] = [await t.user("alice"), await t.server()];
    const deep = await http("POST", "/v1/feeds/user/alice/activities", { token: alice, rawBody: withDeep({ verb: "post", object: "o", custom: "$deep" }, 20_000) });
    expectField(deep, "custom", CUSTOM_DEPTH_RULE);
    const limit = await http("POST", "/v1/feeds/user/alice/activities", { token: alice, body: { verb: "post", object: "o", custom: nested(customDepth) } });
    expect(limit.status).toBe(201);

    const id = limit.body.id as string;
    expectField(await http("PATCH", `/v1/activities/${id}`, { token: alice, rawBody: withDeep({ set: { "custom.x": "$deep" } }, 20_000) }), "set.custom.x", SET_DEPTH_RULE);
    expectField(await http("PATCH", `/v1/activities/${id}`, { token: alice, body: { set: { "custom.x.y": nested(customDepth - 1) } } }), "set.custom.x.y", SET_DEPTH_RULE);
    expect((await http("PATCH", `/v1/activities/${id}`, { token: alice, body: { set: { "custom.x.y": nested(customDepth - 2) } } })).status).toBe(200);

    const item = (custom: unknown) => ({ feed: "user:bob", activity: { actor: "user:bob", verb: "post", object: "o", custom } });
    const batch = await http("POST", "/v1/batch/activities", { token: server, rawBody: withDeep({ activities: [item({ a: 1 }), item("$deep")] }, 20_000) });
    expect(batch.status).toBe(200);
    expect(batch.body.results).toMatchObject([{ index: 0, ok: true }, { index: 1, ok: false, code: "VALIDATION_FAILED" }]);
  });

  it("users: PUT with 500 levels, and a batch item", async () => {
    const t = await newTenant();
    const server = await t.server();
    expectField(await http("PUT", "/v1/users/deep", { token: server, rawBody: withDeep({ custom: "$deep" }, 500) }), "custom", CUSTOM_DEPTH_RULE);
    expectField(await http("PUT", "/v1/users/deep", { token: server, rawBody: withDeep({ custom: "$deep" }, 20_000) }), "custom", CUSTOM_DEPTH_RULE);
    expect((await http("GET", "/v1/users/deep", { token: server })).status).toBe(404);
    const batch = await http("POST", "/v1/batch/users", { token: server, rawBody: withDeep({ users: [{ id: "a", custom: {} }, { id: "b", custom: "$deep" }] }, 500) });
    expect(batch.status).toBe(200);
    expect(batch.body.results).toMatchObject([{ index: 0, ok: true }, { index: 1, ok: false, code: "VALIDATION_FAILED" }]);
  });

  it("objects: put, patch, bulk and batch", async () => {
    const t = await newTenant();
    const server = await t.server();
    expectField(await http("PUT", "/v1/objects/post/deep", { token: server, rawBody: withDeep({ custom: "$deep" }, 20_000) }), "custom", CUSTOM_DEPTH_RULE);
    expect((await http("PUT", "/v1/objects/post/1", { token: server, body: { custom: {} } })).status).toBe(201);
    expectField(await http("PATCH", "/v1/objects/post/1", { token: server, rawBody: withDeep({ set: { "custom.x": "$deep" } }, 20_000) }), "set.custom.x", SET_DEPTH_RULE);
    const objects = withDeep({ objects: [{ type: "post", id: "2", custom: {} }, { type: "post", id: "3", custom: "$deep" }] }, 20_000);
    expectField(await http("POST", "/v1/objects/bulk", { token: server, rawBody: objects }), "objects.1.custom", CUSTOM_DEPTH_RULE);
    const batch = await http("POST", "/v1/batch/objects", { token: server, rawBody: objects });
    expect(batch.status).toBe(200);
    expect(batch.body.results).toMatchObject([{ index: 0, ok: true }, { index: 1, ok: false, code: "VALIDATION_FAILED" }]);
  });

  it("promoted: create with 20,000 levels", async () => {
    const t = await newTenant();
    const rawBody = withDeep({ actor: "brand", verb: "promote", object: "o", custom: "$deep" }, 20_000);
    expectField(await http("POST", "/v1/promoted", { token: await t.server(), rawBody }), "custom", CUSTOM_DEPTH_RULE);
  });
});

describe("1 MiB of brackets never reaches a stack", () => {
  const brackets = (n: number) => "[".repeat(n) + "]".repeat(n);
  const bodies: [label: string, raw: string][] = [
    ["520,000 balanced brackets", brackets(520_000)],
    ["1,000,000 unclosed brackets", "[".repeat(1_000_000)],
    ["custom of 500,000 brackets", `{"verb":"v","object":"o","custom":${brackets(500_000)}}`],
    ["a field of custom holding 500,000 brackets", `{"verb":"v","object":"o","custom":{"a":${brackets(500_000)}}}`],
    ["objects 150,000 levels deep", `{"verb":"v","object":"o","custom":${'{"a":'.repeat(150_000)}1${"}".repeat(150_000)}}`],
  ];

  // Each body costs the gateway ~75 ms of JSON.parse (V8 builds every level before the depth
  // rules see one), more on a loaded machine: one that comes while other requests execute may
  // find the loop delayed past the overload limit and be shed (429, Retry-After), which a client
  // retries; what the title claims is the answer of an admitted body.
  it("each body on each route that takes one answers 400 in the envelope", async () => {
    const t = await newTenant();
    const [alice, server] = [await t.user("alice"), await t.server()];
    const added = await http("POST", "/v1/feeds/user/alice/activities", { token: alice, body: { verb: "post", object: "o" } });
    const routes: [method: string, path: string, token: string][] = [
      ["POST", "/v1/feeds/user/alice/activities", alice],
      ["PATCH", `/v1/activities/${added.body.id}`, alice],
      ["PUT", "/v1/users/u", server],
      ["PUT", "/v1/objects/post/1", server],
      ["POST", "/v1/batch/activities", server],
    ];
    for (const [label, rawBody] of bodies) {
      expect(Buffer.byteLength(rawBody)).toBeLessThanOrEqual(1024 * 1024);
      for (const [method, path, token] of routes) {
        const res = await admitted(() => http(method, path, { token, rawBody }));
        expect(res.status, `${label}: ${method} ${path}`).toBe(400);
        expect(envelope(res).code).toBe("VALIDATION_FAILED");
      }
    }
  });
});
