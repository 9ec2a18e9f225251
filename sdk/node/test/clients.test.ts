import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  FeedsApiError,
  OperatorClient,
  ServerClient,
  UserClient,
  createUserToken,
  feedRefString,
  paginate,
  parseFeedRef,
} from "../src/index.js";
import { envelope, startFakeServer, type FakeServer } from "./fake-server.js";

const KEY = "key_abc";
const SECRET = "secret-secret-secret-secret-secret-01";

let server: FakeServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

const bearer = (auth: string | undefined) => (auth ?? "").replace(/^Bearer /, "");
const noSleep = async () => {};

describe("feed refs", () => {
  it("parses group:id and {group, id}", () => {
    expect(parseFeedRef("user:alice")).toEqual({ group: "user", id: "alice" });
    expect(parseFeedRef({ group: "timeline", id: "b" })).toEqual({ group: "timeline", id: "b" });
    expect(feedRefString({ group: "user", id: "x" })).toBe("user:x");
    expect(() => parseFeedRef("nocolon")).toThrow(TypeError);
    expect(() => parseFeedRef(":x")).toThrow(TypeError);
    expect(() => parseFeedRef("user:")).toThrow(TypeError);
  });
});

describe("ServerClient", () => {
  it("mints a server token once (cached) with kid = apiKey and no exp", async () => {
    server = await startFakeServer([{ status: 200, body: { id: "u1", custom: {}, created_at: "x", updated_at: "x" } }]);
    const client = new ServerClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET });
    await client.getUser("u1");
    await client.getUser("u1");
    const [a, b] = server.requests.map((r) => bearer(r.headers.authorization));
    expect(a).toBeTruthy();
    expect(a).toBe(b);
    expect(decodeProtectedHeader(a ?? "")).toMatchObject({ alg: "HS256", kid: KEY });
    const claims = decodeJwt(a ?? "");
    expect(claims["server"]).toBe(true);
    expect(claims.exp).toBeUndefined();
  });

  it("encodes path segments and builds the routes of the contract", async () => {
    server = await startFakeServer([{ status: 200, body: { results: [], next: null } }]);
    const c = new ServerClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET });
    await c.readFeed("user:a b/c", { limit: 5, next: null });
    await c.readFeed({ group: "timeline", id: "x@y.z" }, { next: "abc" });
    await c.follow("timeline:1", { group: "user", id: "2" }, { activity_copy_limit: 0 });
    await c.unfollow("timeline:1", "user:2", { keep_history: false });
    await c.getObjects(["song:1", "album:2"]);
    await c.upsertUser("alice", { name: "Alice" });
    await c.react("act-1", "like", { user_id: "bob" });
    await c.unreact("act-1", "like", { user_id: "bob" });
    await c.notifications({ owner: "bob", limit: 10 });
    await c.batchUsers([{ id: "u1", custom: {} }]);
    await c.queueDepth("fanout");
    const seen = server.requests.map((r) => `${r.method} ${r.url}`);
    expect(seen).toEqual([
      "GET /v1/feeds/user/a%20b%2Fc?limit=5",
      "GET /v1/feeds/timeline/x%40y.z?next=abc",
      "POST /v1/feeds/timeline/1/follows",
      "DELETE /v1/feeds/timeline/1/follows/user/2?keep_history=false",
      "GET /v1/objects?refs=song%3A1%2Calbum%3A2",
      "PUT /v1/users/alice",
      "POST /v1/activities/act-1/reactions",
      "DELETE /v1/activities/act-1/reactions/like?user_id=bob",
      "GET /v1/notifications?limit=10&owner=bob",
      "POST /v1/batch/users",
      "GET /v1/health/queues/fanout",
    ]);
    const bodies = server.requests.map((r) => r.json);
    expect(bodies[2]).toEqual({ target: "user:2", activity_copy_limit: 0 });
    expect(bodies[5]).toEqual({ custom: { name: "Alice" } });
    expect(bodies[6]).toEqual({ kind: "like", user_id: "bob" });
    expect(bodies[9]).toEqual({ users: [{ id: "u1", custom: {} }] });
    expect(server.requests[10]?.headers.authorization).toBeUndefined();
  });

  it("feedSignal sends If-None-Match and reports 304 as notModified", async () => {
    server = await startFakeServer((req) =>
      req.headers["if-none-match"] === '"v7"'
        ? { status: 304, headers: { etag: '"v7"' } }
        : { status: 200, headers: { etag: '"v7"' }, body: { feed: "user:1", version: 7, head: "a" } },
    );
    const c = new ServerClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET });
    const first = await c.feedSignal("user:1");
    expect(first).toEqual({ notModified: false, etag: '"v7"', body: { feed: "user:1", version: 7, head: "a" } });
    const second = await c.feedSignal("user:1", { etag: first.etag ?? "" });
    expect(second.notModified).toBe(true);
    expect(second.etag).toBe('"v7"');
  });

  it("ready() resolves the 503 body without retrying", async () => {
    const body = { status: "unavailable", checks: [{ name: "mongodb", ok: false }] };
    server = await startFakeServer([{ status: 503, body }]);
    const c = new ServerClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET, sleep: noSleep });
    await expect(c.ready()).resolves.toEqual(body);
    expect(server.requests).toHaveLength(1);
  });

  it("treats CONTENT_REJECTED (422) as final", async () => {
    server = await startFakeServer([{ status: 422, body: envelope("CONTENT_REJECTED", "blocked term") }]);
    const c = new ServerClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET, sleep: noSleep });
    await expect(c.addComment("a1", { text: "bad", user_id: "u" })).rejects.toMatchObject({
      code: "CONTENT_REJECTED",
      status: 422,
    });
    expect(server.requests).toHaveLength(1);
  });

  it("with a static token, sends it as-is", async () => {
    server = await startFakeServer([{ status: 403, body: envelope("FORBIDDEN") }]);
    const userToken = await createUserToken(KEY, SECRET, "u1");
    const c = new ServerClient({ baseUrl: server.baseUrl, token: userToken });
    await expect(c.upsertUser("u2")).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(bearer(server.requests[0]?.headers.authorization)).toBe(userToken);
  });

  it("paginate() walks the next cursors", async () => {
    server = await startFakeServer((req) =>
      req.query.get("next") === "p2"
        ? { status: 200, body: { results: [3], next: null } }
        : { status: 200, body: { results: [1, 2], next: "p2" } },
    );
    const c = new ServerClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET });
    const all: unknown[] = [];
    for await (const f of paginate((next) => c.followers("user:1", { next, limit: 2 }))) all.push(f);
    expect(all).toEqual([1, 2, 3]);
  });
});

describe("UserClient", () => {
  it("mints a user token (default 1h) for its user", async () => {
    server = await startFakeServer([{ status: 200, body: { id: "alice", custom: {}, created_at: "t", updated_at: "t" } }]);
    const c = new UserClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET, userId: "alice" });
    expect(c.userId).toBe("alice");
    await expect(c.me()).resolves.toMatchObject({ id: "alice" });
    const token = bearer(server.requests[0]?.headers.authorization);
    expect(server.requests[0]?.url).toBe("/v1/me");
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: "HS256", kid: KEY });
    const claims = decodeJwt(token);
    expect(claims["user_id"]).toBe("alice");
    expect(claims.exp).toBe((claims.iat ?? 0) + 3600);
  });

  it("re-mints once after UNAUTHENTICATED and retries with the fresh token", async () => {
    const realNow = Date.now.bind(Date);
    let offsetMs = 0;
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + offsetMs);
    server = await startFakeServer((_req, i) => {
      if (i === 0) {
        offsetMs += 5_000; // the "revocation" happened; the next mint gets a later iat
        return { status: 401, body: envelope("UNAUTHENTICATED") };
      }
      return { status: 200, body: { results: [], next: null, unseen: 0, unread: 0 } };
    });
    const c = new UserClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET, userId: "bob", expiresIn: "15m", sleep: noSleep });
    await expect(c.notifications()).resolves.toMatchObject({ unseen: 0 });
    expect(server.requests).toHaveLength(2);
    const [t1 = "", t2 = ""] = server.requests.map((r) => bearer(r.headers.authorization));
    expect(t2).not.toBe(t1);
    expect(decodeJwt(t2).iat).toBeGreaterThan(decodeJwt(t1).iat ?? 0);
    expect(decodeJwt(t2)["user_id"]).toBe("bob");
    // the fresh token is cached for the next call
    await c.notifications();
    expect(bearer(server.requests[2]?.headers.authorization)).toBe(t2);
  });

  it("the re-minted token is issued at the next whole second (revocation compares iat with revoked_before)", async () => {
    const nowMs = 1_700_000_000_300;
    vi.spyOn(Date, "now").mockImplementation(() => nowMs);
    const waits: number[] = [];
    server = await startFakeServer((_req, i) =>
      i === 0 ? { status: 401, body: envelope("UNAUTHENTICATED") } : { status: 200, body: { id: "bob", custom: {}, created_at: "t", updated_at: "t" } },
    );
    const c = new UserClient({
      baseUrl: server.baseUrl,
      apiKey: KEY,
      apiSecret: SECRET,
      userId: "bob",
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    await c.me();
    const [t1 = "", t2 = ""] = server.requests.map((r) => bearer(r.headers.authorization));
    expect(decodeJwt(t1).iat).toBe(1_700_000_000);
    expect(waits).toEqual([700]);
    expect(decodeJwt(t2).iat).toBe(1_700_000_001);
    expect(decodeJwt(t2).exp).toBe(1_700_000_001 + 3600);
  });

  it("re-mints only once: a second UNAUTHENTICATED is thrown", async () => {
    server = await startFakeServer([{ status: 401, body: envelope("UNAUTHENTICATED") }]);
    const c = new UserClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET, userId: "bob", sleep: noSleep });
    const err = (await c.me().catch((e: unknown) => e)) as FeedsApiError;
    expect(err).toBeInstanceOf(FeedsApiError);
    expect(err.code).toBe("UNAUTHENTICATED");
    expect(server.requests).toHaveLength(2);
  });

  it("with a static token there is nothing to re-mint: one request", async () => {
    server = await startFakeServer([{ status: 401, body: envelope("UNAUTHENTICATED") }]);
    const token = await createUserToken(KEY, SECRET, "carol");
    const c = new UserClient({ baseUrl: server.baseUrl, token });
    expect(c.userId).toBe("carol");
    await expect(c.me()).rejects.toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(server.requests).toHaveLength(1);
  });

  it("reauthenticate: false disables the re-mint", async () => {
    server = await startFakeServer([{ status: 401, body: envelope("UNAUTHENTICATED") }]);
    const c = new UserClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET, userId: "d", reauthenticate: false });
    await expect(c.me()).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect(server.requests).toHaveLength(1);
  });

  it("writes to its own feed with actor omitted", async () => {
    server = await startFakeServer([{ status: 201, body: { id: "a1" } }]);
    const c = new UserClient({ baseUrl: server.baseUrl, apiKey: KEY, apiSecret: SECRET, userId: "alice" });
    await c.addActivity("user:alice", { verb: "post", object: "note:1", foreign_id: "f1", time: "2024-01-01T00:00:00Z" });
    expect(server.requests[0]?.url).toBe("/v1/feeds/user/alice/activities");
    expect(server.requests[0]?.json).toEqual({ verb: "post", object: "note:1", foreign_id: "f1", time: "2024-01-01T00:00:00Z" });
  });
});

describe("OperatorClient", () => {
  it("login stores the session token; logout forgets it", async () => {
    server = await startFakeServer((req) => {
      if (req.path === "/operator/login") {
        return {
          status: 200,
          body: { token: "sess-1", expires_at: "t", operator: { id: "o1", name: "O", email: "o@x.io", role: "owner", tenant_id: "t1" } },
        };
      }
      if (req.path === "/operator/logout") return { status: 204 };
      return { status: 200, body: { id: "o1" } };
    });
    const op = new OperatorClient({ baseUrl: server.baseUrl });
    const session = await op.login("o@x.io", "pw");
    expect(session.operator.role).toBe("owner");
    expect(op.token).toBe("sess-1");
    await op.currentOperator();
    await op.logout();
    expect(op.token).toBeUndefined();
    await op.tenant();
    const [login, me, logout, tenant] = server.requests;
    expect(login?.headers.authorization).toBeUndefined();
    expect(login?.json).toEqual({ email: "o@x.io", password: "pw" });
    expect(me?.headers.authorization).toBe("Bearer sess-1");
    expect(logout?.method).toBe("POST");
    expect(logout?.headers.authorization).toBe("Bearer sess-1");
    expect(tenant?.headers.authorization).toBeUndefined();
  });

  it("builds the operator and admin routes", async () => {
    server = await startFakeServer([{ status: 200, body: {} }]);
    const op = new OperatorClient({ baseUrl: server.baseUrl, token: "staff-tok" });
    await op.createTenant({ name: "Acme", rate_limit_per_minute: 60 });
    await op.suspendTenant("t 1");
    await op.rotateTenantSecret("t1");
    await op.createTenantOperator("t1", { email: "a@b.io", name: "A", role: "owner" });
    await op.changeRole("op1", "member");
    await op.enable("op1");
    await op.inspectFeed("user:1", { limit: 3 });
    await op.inspectStats({ group: "user", id: "1" });
    await op.webhookEvents({ cursor: "c1" });
    await op.signal({ etag: '"e"' });
    await op.adminQueues();
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      "POST /admin/tenants",
      "POST /admin/tenants/t%201/suspend",
      "POST /admin/tenants/t1/rotate-secret",
      "POST /admin/tenants/t1/operators",
      "PATCH /operator/team/op1",
      "POST /operator/team/op1/enable",
      "GET /operator/inspect/feeds/user/1?limit=3",
      "GET /operator/inspect/feeds/user/1/stats",
      "GET /operator/webhooks/events?cursor=c1",
      "GET /operator/signal",
      "GET /admin/queues",
    ]);
    expect(server.requests[0]?.json).toEqual({ name: "Acme", rate_limit_per_minute: 60 });
    expect(server.requests[4]?.json).toEqual({ role: "member" });
    expect(server.requests[9]?.headers["if-none-match"]).toBe('"e"');
    expect(server.requests.every((r) => r.headers.authorization === "Bearer staff-tok")).toBe(true);
  });
});
