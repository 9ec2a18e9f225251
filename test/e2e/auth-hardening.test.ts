import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { envelope, http, namespaceKeys, newIp, newOperator, newTenant, staffToken, tenantRedisKey, type RawAnswer, type TestTenant } from "../support/api.js";

// Issue 8, items 2 to 6: what the edge does with hostile or misplaced credentials.

const now = () => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sign = (t: TestTenant, claims: Record<string, unknown>, kid = t.apiKey) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256", kid }).sign(new TextEncoder().encode(t.apiSecret));

let redis: Redis;
beforeAll(async () => {
  redis = new Redis(inject("redisUrl"), { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
});
afterAll(() => redis.disconnect());


describe("unknown kids", () => {
  it("a flood of unknown kids, random or repeated, well-shaped or not, answers 401 (429 once the address spent its budget) and leaves no Redis key but the address's count", async () => {
    const t = await newTenant();
    const apiKeyShaped = () => `ak_${randomBytes(12).toString("hex")}`;
    const repeated = apiKeyShaped();
    const kids = [
      ...Array.from({ length: 40 }, apiKeyShaped),
      ...Array.from({ length: 40 }, () => repeated),
      ...Array.from({ length: 20 }, () => randomBytes(8).toString("base64url")),
      "ak_nope",
      `ak_${"0".repeat(23)}`,
      "x".repeat(128),
    ];
    const ip = newIp();
    const before = new Set(await namespaceKeys(redis));
    const answers = await Promise.all(
      kids.map(async (kid) => http("GET", "/v1/users/u1", { token: await sign(t, { server: true, iat: now() }, kid), ip })),
    );
    // Concurrent: how many are checked before the first failures are counted varies.
    expect(answers.filter((a) => a.status !== 401 && a.status !== 429)).toEqual([]);
    expect(answers.filter((a) => a.status === 401).length).toBeGreaterThanOrEqual(60);
    const added = (await namespaceKeys(redis)).filter((k) => !before.has(k));
    expect(added.every((k) => k.startsWith(`${inject("namespace")}:{${ip}}:rl:authfail:`)), added.join(", ")).toBe(true);
    // The tenant's own credential still works (and is then stamped).
    expect((await http("GET", "/v1/users/u1", { token: await t.server() })).status).toBe(404);
  });
});

describe("token kind", () => {
  it("a user_id that is not an id answers 401 and never grants server rights", async () => {
    const t = await newTenant();
    const user = (user_id: unknown, extra: Record<string, unknown> = {}) => sign(t, { user_id, iat: now(), exp: now() + 60, ...extra });
    const bad: Record<string, Promise<string>> = {
      "empty user_id": user(""),
      "user_id with a space": user("bad id!"),
      "user_id with CR/LF": user("a\r\nfeeds-tenant: t_other"),
      "user_id above U+00FF": user("\u20acuro"),
      "user_id over 128 characters": user("x".repeat(129)),
      "numeric user_id": user(42),
      "null user_id beside server: true": sign(t, { server: true, user_id: null, iat: now() }),
      "server: true beside a valid user_id": user("alice", { server: true }),
      "server: \"true\" as a string": sign(t, { server: "true", iat: now() }),
    };
    for (const [label, token] of Object.entries(bad)) {
      // A server-only write and a read open to both kinds.
      for (const [method, path, body] of [
        ["PUT", "/v1/users/victim", { custom: { pwned: true } }],
        ["GET", "/v1/users/victim", undefined],
      ] as const) {
        const res = await http(method, path, { token: await token, body });
        expect(res.status, `${label}: ${method}`).toBe(401);
        expect(envelope(res).code).toBe("UNAUTHENTICATED");
      }
    }
    expect((await http("GET", "/v1/users/victim", { token: await t.server() })).status).toBe(404);
    // Well-formed ids of either kind still work, with their own rights.
    const alice = await user("alice.b-c_d@x.io");
    expect((await http("GET", "/v1/users/victim", { token: alice })).status).toBe(404);
    expect((await http("PUT", "/v1/users/victim", { token: alice, body: { custom: {} } })).status).toBe(403);
  });
});

describe("revocation of a user without a record", () => {
  it("answers 200, refuses the user's earlier tokens (also once Redis forgot), creates no user record", async () => {
    const t = await newTenant();
    const server = await t.server();
    const early = await t.user("ghost");
    expect((await http("GET", "/v1/users/someone", { token: early })).status).toBe(404);
    await sleep(1100);
    const revoked = await http("POST", "/v1/users/ghost/revoke-tokens", { token: server });
    expect(revoked.status).toBe(200);
    expect(Date.parse(revoked.body.revoked_before)).toBeGreaterThan(Date.now() - 5000);
    expect((await http("GET", "/v1/users/someone", { token: early })).status).toBe(401);
    // Redis only caches the stamp: with its key gone, MongoDB still refuses the token.
    await redis.del(tenantRedisKey(t.id, "rv", "ghost"));
    expect((await http("GET", "/v1/users/someone", { token: early })).status).toBe(401);
    // Revoking creates no user.
    expect((await http("GET", "/v1/users/ghost", { token: server })).status).toBe(404);
    const owner = await newOperator(t.id, "owner");
    expect((await http("GET", "/operator/inspect/users", { token: owner.token })).body.results).toEqual([]);
    await sleep(1100);
    const later = await t.user("ghost");
    expect((await http("GET", "/v1/users/someone", { token: later })).status).toBe(404);
    expect((await http("GET", "/v1/me", { token: later })).status).toBe(404);

    // A user created after its revocation: still refused, and the list view shows the stamp.
    expect((await http("PUT", "/v1/users/ghost", { token: server, body: { custom: {} } })).status).toBe(201);
    await redis.del(tenantRedisKey(t.id, "rv", "ghost"));
    expect((await http("GET", "/v1/me", { token: early })).status).toBe(401);
    expect((await http("GET", "/v1/me", { token: later })).status).toBe(200);
    const list = await http("GET", "/operator/inspect/users", { token: owner.token });
    expect(list.body.results).toMatchObject([{ id: "ghost", revoked_before: revoked.body.revoked_before }]);
  });
});

describe("concurrent revocations", () => {
  it("first revocations of one user racing each other all answer 200", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(Array.from({ length: 8 }, () => http("POST", `/v1/users/racer${round}/revoke-tokens`, { token: server })));
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    }
  });
});

describe("401 and 403 answers", () => {
  it("carry one generic message per status, whatever the reason", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("PUT", "/v1/users/alice", { token: server, body: { custom: {} } })).status).toBe(201);
    const alice = await t.user("alice");
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    const bobs = await http("POST", "/v1/feeds/user/bob/activities", { token: server, body: { actor: "user:bob", verb: "post", object: "o:1" } });
    expect(bobs.status).toBe(201);
    const loggedOut = await newOperator(t.id, "member");
    expect((await http("POST", "/operator/logout", { token: loggedOut.token })).status).toBe(204);
    await sleep(1100);
    expect((await http("POST", "/v1/users/alice/revoke-tokens", { token: server })).status).toBe(200);
    const alice2 = await (async () => {
      await sleep(1100);
      return t.user("alice");
    })();

    const forbidden: [string, Promise<RawAnswer>][] = [
      ["user token writing another's feed", http("POST", "/v1/feeds/user/bob/activities", { token: alice2, body: { verb: "post", object: "o:2" } })],
      ["user token on a server-only route", http("PUT", "/v1/users/alice", { token: alice2, body: { custom: {} } })],
      ["server token on a user-only route", http("GET", "/v1/me", { token: server })],
      ["user token deleting another's activity (feed service)", http("DELETE", `/v1/activities/${bobs.body.id}`, { token: alice2 })],
      ["user token following from another's feed (graph service)", http("POST", "/v1/feeds/user/bob/follows", { token: alice2, body: { target: "user:carol" } })],
      ["member on an owner route", http("POST", "/operator/tenant/rotate-secret", { token: member.token })],
      ["owner disabling itself (identity service)", http("POST", `/operator/team/${owner.id}/disable`, { token: owner.token })],
      ["staff on a tenant route", http("GET", "/operator/tenant", { token: await staffToken() })],
    ];
    const unauthenticated: [string, Promise<RawAnswer>][] = [
      ["no token", http("GET", "/v1/users/alice")],
      ["not a token", http("GET", "/v1/users/alice", { token: "x.y.z" })],
      ["revoked user token", http("GET", "/v1/users/alice", { token: alice })],
      ["logged-out session (identity service)", http("GET", "/operator/me", { token: loggedOut.token })],
      ["wrong password (identity service)", http("POST", "/operator/login", { body: { email: owner.email, password: "wrong password!" }, ip: newIp() })],
      ["unknown invite (identity service)", http("POST", "/operator/invite/accept", { body: { token: "nope", password: "long enough password" }, ip: newIp() })],
    ];
    const messages = async (cases: [string, Promise<RawAnswer>][], status: number) => {
      const out = new Set<string>();
      for (const [label, p] of cases) {
        const res = await p;
        expect(res.status, label).toBe(status);
        out.add(envelope(res).message);
      }
      return [...out];
    };
    expect(await messages(forbidden, 403)).toEqual([expect.any(String)]);
    expect(await messages(unauthenticated, 401)).toEqual([expect.any(String)]);

    // The suspended tenant's 403 says no more than any other.
    const [generic403] = await messages(forbidden.slice(0, 1), 403);
    expect((await http("POST", `/admin/tenants/${t.id}/suspend`, { token: await staffToken() })).status).toBe(200);
    const suspended = await http("GET", "/v1/users/alice", { token: server });
    expect(suspended.status).toBe(403);
    expect(envelope(suspended).message).toBe(generic403);
  });
});

describe("/admin", () => {
  it("answers 403 to any authenticated caller that is not platform staff, 401 without a valid token", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    const callers: [string, string, number][] = [
      ["server token", await t.server(), 403],
      ["user token", await t.user("u1"), 403],
      ["tenant owner", owner.token, 403],
      ["tenant member", member.token, 403],
      ["no token", "", 401],
      ["garbage", "garbage", 401],
      ["expired server token", await sign(t, { server: true, iat: now() - 100, exp: now() - 60 }), 401],
      ["token of an unknown kid", await sign(t, { server: true, iat: now() }, `ak_${randomBytes(12).toString("hex")}`), 401],
    ];
    for (const [label, token, status] of callers) {
      for (const [method, path] of [
        ["GET", "/admin/tenants"],
        ["POST", `/admin/tenants/${t.id}/suspend`],
        ["GET", "/admin/queues"],
      ] as const) {
        const res = await http(method, path, token ? { token } : {});
        expect(res.status, `${label}: ${method} ${path}`).toBe(status);
        expect(envelope(res).code).toBe(status === 403 ? "FORBIDDEN" : "UNAUTHENTICATED");
      }
    }
    // Nothing above suspended the tenant.
    expect((await http("GET", `/admin/tenants/${t.id}`, { token: await staffToken() })).body.status).toBe("active");
    // The rule is /admin's (contract section 1): on operator routes a tenant token is still no
    // operator session at all.
    expect((await http("GET", "/operator/me", { token: await t.server() })).status).toBe(401);
  });
});
