import { describe, expect, inject, it, vi } from "vitest";
import {
  FeedsApiError,
  OperatorClient,
  ServerClient,
  UserClient,
  createUserToken,
  paginate,
  type Activity,
  type Page,
  type UserCredentialOptions,
} from "@feeds/node";
import { PASSWORD, http, newIp, newOperator, newTenant, staffToken, uniqueEmail, type TestTenant } from "../support/api.js";

// Every SDK method whose route exists, called through ServerClient / UserClient / OperatorClient
// against the running system: the typed answer is the route's answer, and failures are
// FeedsApiError with the envelope's code, status, requestId and fields. The clients check every
// answer against its route's response schema (validateResponses): a field missing, mistyped or
// not in the schema fails the call.

const baseUrl = () => inject("baseUrl");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const anId = expect.stringMatching(UUID);

type UserExtras = Omit<UserCredentialOptions, "baseUrl" | "apiKey" | "apiSecret" | "userId">;

interface SdkTenant {
  t: TestTenant;
  server: ServerClient;
  user: (userId: string, extra?: UserExtras) => UserClient;
}

/** A fresh tenant with an SDK server client and a factory of SDK user clients. */
async function sdkTenant(opts: { rate_limit_per_minute?: number } = {}): Promise<SdkTenant> {
  const t = await newTenant(opts);
  const creds = { baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret, validateResponses: true };
  return {
    t,
    server: new ServerClient(creds),
    user: (userId, extra = {}) => new UserClient({ ...creds, ...extra, userId }),
  };
}

/** An operator client whose logins come from an address of their own (login limits are per address). */
const operatorClient = (token?: string) =>
  new OperatorClient({ baseUrl: baseUrl(), headers: { "x-forwarded-for": newIp() }, validateResponses: true, ...(token ? { token } : {}) });

/** The FeedsApiError a call rejects with (fails the test when it resolves or throws anything else). */
async function apiError(promise: Promise<unknown>): Promise<FeedsApiError> {
  const outcome = await promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a FeedsApiError, got ${JSON.stringify(outcome.resolved)}`);
  expect(outcome.error).toBeInstanceOf(FeedsApiError);
  const err = outcome.error as FeedsApiError;
  expect(err.requestId).toMatch(UUID);
  expect(err.message).not.toBe("");
  return err;
}

/** A fetch that records each attempt's status and bearer token. */
function recorder() {
  const seen: { method: string; url: string; status: number; token: string | undefined }[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const auth = new Headers(init?.headers).get("authorization");
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    seen.push({ method: init?.method ?? "GET", url, status: res.status, token: auth?.replace(/^Bearer /, "") });
    return res;
  };
  return { seen, fetch: recordingFetch };
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString()) as Record<string, unknown>;

async function all<T>(fetchPage: (next: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of paginate(fetchPage)) out.push(item);
  return out;
}

describe("sdk: health and monitoring", () => {
  it("health, ready and queueDepth answer the routes' bodies and send no token", async () => {
    const { server } = await sdkTenant();
    const rec = recorder();
    const clients = [new OperatorClient({ baseUrl: baseUrl() }), new ServerClient({ baseUrl: baseUrl(), token: await server.getToken() ?? "", fetch: rec.fetch })];
    for (const c of clients) {
      const health = await c.health();
      expect(health).toEqual({ status: "ok", version: inject("buildVersion") });
      expect(health).toEqual((await http("GET", "/v1/health")).body);
      const ready = await c.ready();
      expect(ready.status).toBe("ok");
      expect(ready.checks.map((check) => check.name)).toEqual(expect.arrayContaining(["mongodb", "nats", "redis"]));
      for (const check of ready.checks) expect(check).toEqual({ name: expect.any(String), ok: true });
      for (const queue of ["fanout", "notify"] as const) {
        expect(await c.queueDepth(queue)).toEqual({ queue, pending: expect.any(Number), dlq_depth: expect.any(Number) });
      }
    }
    expect(rec.seen).toHaveLength(4);
    expect(rec.seen.every((s) => s.token === undefined && s.status === 200)).toBe(true);
    // An unknown queue is a FeedsApiError like any other.
    expect(await apiError(server.queueDepth("nope" as "fanout"))).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
  });
});

describe("sdk: notifications and change signals", () => {
  it("notifications, markNotifications, notificationSignal; the console's signal; queueDepth of the webhooks queue", async () => {
    const { t, server, user } = await sdkTenant();
    const ann = user("ann");
    await server.upsertUser("ann", { name: "Ann" });
    await server.follow("timeline:bob", "user:ann");
    await server.follow("timeline:cat", "user:ann");
    const page = await vi.waitFor(
      async () => {
        const p = await ann.notifications();
        expect(p.results).toHaveLength(2);
        return p;
      },
      { timeout: 15_000, interval: 100 },
    );
    const follow = { id: anId, verb: "follow", object: "user:ann", reaction_kind: null, activity_id: null, created_at: ISO };
    const unseen = { ...follow, seen_at: null, read_at: null };
    expect(page).toEqual({
      results: [{ ...unseen, actor: "user:cat", actor_user: null }, { ...unseen, actor: "user:bob", actor_user: null }],
      next: null,
      unseen: 2,
      unread: 2,
    });
    const [newest, oldest] = page.results;
    const firstPage = await server.notifications({ owner: "ann", limit: 1 });
    expect(firstPage).toMatchObject({ results: [newest], next: expect.any(String), unseen: 2, unread: 2 });
    expect(await server.notifications({ owner: "ann", next: firstPage.next })).toMatchObject({ results: [oldest], next: null });

    const signal = await ann.notificationSignal();
    expect(signal).toEqual({ notModified: false, etag: expect.any(String), body: { unseen: 2, unread: 2, version: expect.any(Number) } });
    expect(await ann.notificationSignal({ etag: signal.etag ?? "" })).toEqual({ notModified: true, etag: signal.etag });
    expect(await ann.markNotifications({ seen: [newest?.id ?? ""] })).toEqual({ unseen: 1, unread: 2 });
    expect(await server.markNotifications({ read: true, owner: "ann" })).toEqual({ unseen: 0, unread: 0 });
    const marked = await server.notificationSignal({ owner: "ann", etag: signal.etag ?? "" });
    expect(marked).toMatchObject({ notModified: false, body: { unseen: 0, unread: 0 } });

    const member = operatorClient((await newOperator(t.id, "member")).token);
    const live = await member.signal();
    const counts = { activities: 0, users: 1, webhook_events: 0 };
    expect(live).toEqual({ notModified: false, etag: expect.any(String), body: { version: expect.any(Number), counts } });
    expect(await member.signal({ etag: live.etag ?? "" })).toEqual({ notModified: true, etag: live.etag });
    expect(await member.queueDepth("webhooks")).toEqual({ queue: "webhooks", pending: expect.any(Number), dlq_depth: expect.any(Number) });
  });
});

describe("sdk: users", () => {
  it("upsertUser, getUser, me, batchUsers, revokeTokens", async () => {
    const { server, user } = await sdkTenant();
    const created = await server.upsertUser("alice", { name: "Alice", n: 12345678901234 });
    expect(created).toEqual({ id: "alice", custom: { name: "Alice", n: 12345678901234 }, created_at: ISO, updated_at: ISO });
    const updated = await server.upsertUser("alice", { name: "Alicia" });
    expect(updated).toEqual({ ...created, custom: { name: "Alicia" }, updated_at: ISO });
    expect(await server.getUser("alice")).toEqual(updated);
    expect(await user("bob").getUser("alice")).toEqual(updated);
    expect(await user("alice").me()).toEqual(updated);
    expect(await server.upsertUser("empty")).toMatchObject({ id: "empty", custom: {} });

    const items = [{ id: "b1", custom: { a: 1 } }, { id: "bad id!", custom: {} }, { id: "b2", custom: {} }];
    const batch = await server.batchUsers(items);
    expect(batch).toEqual({
      results: [
        { index: 0, ok: true, id: "b1" },
        { index: 1, ok: false, code: "VALIDATION_FAILED" },
        { index: 2, ok: true, id: "b2" },
      ],
    });
    expect(await server.batchUsers(items)).toEqual(batch);
    expect((await server.getUser("b1")).custom).toEqual({ a: 1 });

    const before = Date.now();
    const revoked = await server.revokeTokens("alice");
    expect(revoked).toEqual({ revoked_before: ISO });
    expect(Date.parse(revoked.revoked_before)).toBeGreaterThan(before - 5000);
  });

  it("errors are FeedsApiError with code, status, requestId, fields and url", async () => {
    const { t, server, user } = await sdkTenant();
    const missing = await apiError(server.getUser("ghost"));
    expect(missing).toMatchObject({ code: "NOT_FOUND", status: 404, fields: [], retryAfterSeconds: undefined });
    expect(missing.url).toBe(`${baseUrl()}/v1/users/ghost`);
    expect(missing.retryable).toBe(false);
    // The requestId is the one the gateway logged and answered in x-request-id.
    const raw = await server.raw({ method: "GET", path: "/v1/users/ghost" });
    expect(raw.status).toBe(404);
    expect((raw.body as { error: { requestId: string } }).error.requestId).toBe(raw.headers.get("x-request-id"));
    expect(raw.headers.get("x-request-id")).not.toBe(missing.requestId);

    const invalid = await apiError(server.upsertUser("x".repeat(129)));
    expect(invalid).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    expect(invalid.fields).toEqual([{ path: "id", message: expect.any(String) }]);
    const badBody = await apiError(server.call({ method: "PUT", path: "/v1/users/ok", body: { custom: [1] } }));
    expect(badBody.fields.map((f) => f.path)).toEqual(["custom"]);

    expect(await apiError(user("nobody").me())).toMatchObject({ code: "NOT_FOUND", status: 404 });
    // Revoking a user without a record is no error (issue 8): any valid id can be revoked.
    expect(await server.revokeTokens("ghost")).toEqual({ revoked_before: expect.any(String) });
    // A user token on a server-only route (a ServerClient sends any static token as-is).
    const userAsServer = new ServerClient({ baseUrl: baseUrl(), token: await t.user("alice") });
    expect(await apiError(userAsServer.upsertUser("alice"))).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(await apiError(userAsServer.batchUsers([{ id: "x", custom: {} }]))).toMatchObject({ code: "FORBIDDEN" });
    expect(await apiError(userAsServer.revokeTokens("alice"))).toMatchObject({ code: "FORBIDDEN" });

    // A wrong apiKey: refused, re-minted once, refused again, then thrown (no further retry).
    const rec = recorder();
    const wrongKey = new ServerClient({ baseUrl: baseUrl(), apiKey: "no-such-key", apiSecret: t.apiSecret, fetch: rec.fetch });
    expect(await apiError(wrongKey.getUser("alice"))).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(rec.seen.map((s) => s.status)).toEqual([401, 401]);
  });
});

describe("sdk: retries and re-minting against the gateway", () => {
  it("a 429 surfaces as RATE_LIMITED with retryAfterSeconds once retries are exhausted", async () => {
    const { t } = await sdkTenant({ rate_limit_per_minute: 2 });
    const rec = recorder();
    const noRetry = new ServerClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret, maxRetries: 0, fetch: rec.fetch });
    let limited: FeedsApiError | undefined;
    // Two requests per minute: the third in one window is refused (six calls span at most one window change).
    for (let i = 0; i < 6 && !limited; i++) {
      limited = await noRetry.stats("user:x").then(
        () => undefined,
        (e: unknown) => e as FeedsApiError,
      );
    }
    expect(limited).toBeInstanceOf(FeedsApiError);
    const err = limited as FeedsApiError;
    expect(err).toMatchObject({ code: "RATE_LIMITED", status: 429, fields: [] });
    expect(err.retryable).toBe(true);
    expect(err.requestId).toMatch(UUID);
    expect(Number.isInteger(err.retryAfterSeconds)).toBe(true);
    expect(err.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(err.retryAfterSeconds).toBeLessThanOrEqual(60);
    // maxRetries 0: one attempt per call.
    expect(rec.seen.at(-1)?.status).toBe(429);
    expect(rec.seen.filter((s) => s.status === 429)).toHaveLength(1);

    // With retries the client waits Retry-After between attempts (sleep injected: no real wait).
    const waits: number[] = [];
    const retrying = new ServerClient({
      baseUrl: baseUrl(),
      apiKey: t.apiKey,
      apiSecret: t.apiSecret,
      maxRetries: 2,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    let again: FeedsApiError | undefined;
    for (let i = 0; i < 6 && !again; i++) {
      again = await retrying.stats("user:x").then(
        () => undefined,
        (e: unknown) => e as FeedsApiError,
      );
    }
    expect(again).toMatchObject({ code: "RATE_LIMITED", status: 429 });
    expect(waits.length).toBeGreaterThanOrEqual(2);
    for (const ms of waits) {
      expect(ms % 1000).toBe(0);
      expect(ms).toBeGreaterThanOrEqual(1000);
      expect(ms).toBeLessThanOrEqual(60_000);
    }
  });

  it("UserClient re-mints once after a revocation; the next call succeeds with a later token", async () => {
    const { t, server } = await sdkTenant();
    await server.upsertUser("rita", { name: "Rita" });
    const rec = recorder();
    const rita = new UserClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret, userId: "rita", fetch: rec.fetch });
    expect(await rita.me()).toMatchObject({ id: "rita" });
    const before = (await rita.getToken()) as string;

    const { revoked_before } = await server.revokeTokens("rita");
    rec.seen.length = 0;
    // Most likely still within the revocation's second: the SDK waits for the next one to re-mint.
    expect(await rita.me()).toMatchObject({ id: "rita", custom: { name: "Rita" } });
    expect(rec.seen.map((s) => s.status)).toEqual([401, 200]);
    expect(rec.seen[0]?.token).toBe(before);
    const after = (await rita.getToken()) as string;
    expect(after).not.toBe(before);
    expect(rec.seen[1]?.token).toBe(after);
    const revokedMs = Date.parse(revoked_before);
    expect((claimsOf(after)["iat"] as number) * 1000).toBeGreaterThanOrEqual(revokedMs);
    expect(claimsOf(after)["user_id"]).toBe("rita");

    // The fresh token is cached: no second refusal.
    rec.seen.length = 0;
    await rita.me();
    expect(rec.seen.map((s) => s.status)).toEqual([200]);

    // Why the wait: the old token stays refused, and so would one minted in the revocation's second.
    expect(await apiError(new UserClient({ baseUrl: baseUrl(), token: before }).me())).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    if (revokedMs % 1000 !== 0) {
      const sameSecond = await createUserToken(t.apiKey, t.apiSecret, "rita", { issuedAt: Math.floor(revokedMs / 1000) });
      expect(await apiError(new UserClient({ baseUrl: baseUrl(), token: sameSecond }).me())).toMatchObject({ code: "UNAUTHENTICATED" });
    }
    // Again: a second revocation is survived the same way.
    await server.revokeTokens("rita");
    rec.seen.length = 0;
    expect(await rita.me()).toMatchObject({ id: "rita" });
    expect(rec.seen.map((s) => s.status)).toEqual([401, 200]);
    // Without re-minting (reauthenticate: false) the refusal surfaces.
    const strict = new UserClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret, userId: "rita", reauthenticate: false });
    await strict.getToken();
    await server.revokeTokens("rita");
    expect(await apiError(strict.me())).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
  });
});

describe("sdk: activities", () => {
  it("addActivity, getActivity, patchActivity, deleteActivity as server and user", async () => {
    const { server, user } = await sdkTenant();
    await server.upsertUser("ann", { name: "Ann" });
    await server.putObject("song", "1", { title: "One" });
    const time = new Date(Date.now() - 3600_000).toISOString();
    const added = await server.addActivity("user:ann", {
      actor: "user:ann",
      verb: "post",
      object: "song:1",
      foreign_id: "f1",
      time,
      custom: { n: 1, nested: { a: true } },
      refs: ["song:1"],
    });
    const expected: Activity = {
      id: added.id,
      actor: "user:ann",
      verb: "post",
      object: "song:1",
      target: null,
      foreign_id: "f1",
      time,
      custom: { n: 1, nested: { a: true } },
      origin_feed: "user:ann",
      reaction_counts: {},
      actor_user: { id: "ann", custom: { name: "Ann" } },
      refs: ["song:1"],
      edited_at: null,
      version: 1,
    };
    expect(added.id).toMatch(UUID);
    expect(added).toEqual(expected);
    // A live duplicate answers the existing activity.
    expect(await server.addActivity("user:ann", { actor: "user:ann", verb: "other", object: "x", foreign_id: "f1", time })).toEqual(expected);
    expect(await server.getActivity(added.id)).toEqual(expected);
    // User tokens see own_reactions.
    expect(await user("bob").getActivity(added.id)).toEqual({ ...expected, own_reactions: [] });

    // The unresolved-actor warning; a non-user actor gets none.
    const ghost = await server.addActivity("user:ghost", { actor: "user:ghost", verb: "post", object: "o" });
    expect(ghost.warnings).toEqual(["actor_user_unresolved"]);
    expect(ghost.actor_user).toBeNull();
    const system = await server.addActivity("topic:news", { actor: "system:bot", verb: "post", object: "o", target: "topic:news" });
    expect(system).not.toHaveProperty("warnings");
    expect(system).toMatchObject({ target: "topic:news", foreign_id: null, custom: {}, refs: [], actor_user: null });

    const patched = await server.patchActivity(added.id, { set: { "custom.n": 2, "custom.extra": "x" }, unset: ["custom.nested"], refs: [] });
    expect(patched).toEqual({ ...expected, custom: { n: 2, extra: "x" }, refs: [], edited_at: ISO, version: 2 });
    expect(await server.getActivity(added.id)).toEqual(patched);

    // User tokens: actor overwritten, own feed only, own activities only.
    const ann = user("ann");
    const mine = await ann.addActivity("timeline:ann", { verb: "post", object: "note:1" });
    expect(mine).toMatchObject({ actor: "user:ann", origin_feed: "timeline:ann", own_reactions: [], actor_user: { id: "ann", custom: { name: "Ann" } } });
    expect(await ann.patchActivity(mine.id, { set: { "custom.k": 1 } })).toMatchObject({ custom: { k: 1 }, version: 2 });
    const bob = user("bob");
    expect(await apiError(bob.addActivity("user:ann", { verb: "post", object: "o" }))).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(await apiError(bob.patchActivity(mine.id, { set: { "custom.k": 2 } }))).toMatchObject({ code: "FORBIDDEN" });
    expect(await apiError(bob.deleteActivity(mine.id))).toMatchObject({ code: "FORBIDDEN" });
    await expect(ann.deleteActivity(mine.id)).resolves.toBeUndefined();

    // Validation names the field.
    const noTime = await apiError(server.addActivity("user:ann", { actor: "user:ann", verb: "post", object: "o", foreign_id: "f2" }));
    expect(noTime).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    expect(noTime.fields).toEqual([{ path: "time", message: expect.any(String) }]);
    const badPath = await apiError(server.patchActivity(added.id, { set: { title: "x" } }));
    expect(badPath.fields.map((f) => f.path)).toEqual(["set.title"]);

    // Soft delete: 204, then 404 on read, 409 on re-posting the burned identity.
    await expect(server.deleteActivity(added.id)).resolves.toBeUndefined();
    expect(await apiError(server.getActivity(added.id))).toMatchObject({ code: "NOT_FOUND", status: 404 });
    expect(await apiError(server.addActivity("user:ann", { actor: "user:ann", verb: "post", object: "o", foreign_id: "f1", time }))).toMatchObject({
      code: "CONFLICT",
      status: 409,
    });
    expect(await apiError(server.getActivity("not-a-uuid"))).toMatchObject({ code: "NOT_FOUND" });
  });

  it("readFeed pages with next and the cursor alias, carries the sidecars, and paginate() walks it", async () => {
    const { server, user } = await sdkTenant();
    await server.putObject("song", "1", { title: "One" });
    const t0 = Date.parse("2024-03-01T00:00:00.000Z");
    for (let i = 0; i < 5; i++) {
      await server.addActivity("user:pat", {
        actor: "user:pat",
        verb: "post",
        object: `note:${i}`,
        time: new Date(t0 + i * 1000).toISOString(),
        refs: i === 4 ? ["song:1", "song:missing"] : [],
      });
    }
    const promo = await server.createPromoted({ actor: "brand:a", verb: "promote", object: "p:1" });

    const first = await server.readFeed("user:pat", { limit: 2 });
    expect(first.results.map((a) => a.object)).toEqual(["note:4", "note:3"]);
    expect(first.next).toEqual(expect.any(String));
    expect(first.promoted).toEqual([{ id: promo.id, actor: "brand:a", verb: "promote", object: "p:1", custom: {}, promoted: true }]);
    expect(first.objects).toEqual({ "song:1": { type: "song", id: "1", custom: { title: "One" }, updated_at: ISO } });
    expect(first.results[0]).not.toHaveProperty("own_reactions");
    expect(first).toEqual((await http("GET", "/v1/feeds/user/pat?limit=2", { token: (await server.getToken()) as string })).body);

    const second = await server.readFeed({ group: "user", id: "pat" }, { limit: 2, next: first.next });
    expect(second.results.map((a) => a.object)).toEqual(["note:2", "note:1"]);
    expect(second).not.toHaveProperty("promoted");
    expect(second).not.toHaveProperty("objects");
    expect(await server.readFeed("user:pat", { limit: 2, cursor: first.next as string })).toEqual(second);
    // next wins over cursor.
    expect(await server.readFeed("user:pat", { limit: 2, next: first.next, cursor: "garbage" })).toEqual(second);
    const last = await server.readFeed("user:pat", { limit: 2, next: second.next });
    expect(last.results.map((a) => a.object)).toEqual(["note:0"]);
    expect(last.next).toBeNull();

    const walked = await all((next) => server.readFeed("user:pat", { limit: 2, next }));
    expect(walked.map((a) => a.object)).toEqual(["note:4", "note:3", "note:2", "note:1", "note:0"]);

    const asUser = await user("viewer").readFeed("user:pat");
    expect(asUser.results).toHaveLength(5);
    expect(asUser.results.every((a) => Array.isArray(a.own_reactions))).toBe(true);

    const badNext = await apiError(server.readFeed("user:pat", { next: "!!not-a-cursor!!" }));
    expect(badNext).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    const badLimit = await apiError(server.readFeed("user:pat", { limit: 101 }));
    expect(badLimit.fields.map((f) => f.path)).toEqual(["limit"]);
  });

  it("feedSignal reports {feed, version, head} with an ETag and 304 as notModified until a write", async () => {
    const { server, user } = await sdkTenant();
    const empty = await server.feedSignal("user:sig");
    expect(empty).toEqual({ notModified: false, etag: expect.stringMatching(/^(W\/)?".+"$/), body: { feed: "user:sig", version: expect.any(Number), head: null } });
    const etag0 = empty.etag as string;
    expect(await server.feedSignal("user:sig", { etag: etag0 })).toEqual({ notModified: true, etag: etag0 });
    expect(await user("x").feedSignal({ group: "user", id: "sig" }, { etag: etag0 })).toEqual({ notModified: true, etag: etag0 });

    const a = await server.addActivity("user:sig", { actor: "system:x", verb: "post", object: "o" });
    const changed = await server.feedSignal("user:sig", { etag: etag0 });
    expect(changed.notModified).toBe(false);
    expect(changed.etag).not.toBe(etag0);
    expect(changed.body?.head).toBe(a.id);
    expect(changed.body?.version).not.toBe(empty.body?.version);
    expect(await server.feedSignal("user:sig", { etag: changed.etag as string })).toMatchObject({ notModified: true });
  });
});

describe("sdk: follows", () => {
  it("follow, follows, followers, stats, suggestions, unfollow", async () => {
    const { server, user } = await sdkTenant();
    const edge = await server.follow("user:a", "user:b", { activity_copy_limit: 0 });
    expect(edge).toEqual({ source_group: "user", source_id: "a", target_group: "user", target_id: "b", created_at: ISO });
    // An existing edge answers (200) with the same edge.
    expect(await server.follow({ group: "user", id: "a" }, { group: "user", id: "b" })).toEqual(edge);
    await server.follow("user:a", "user:c");
    await server.follow("user:b", "user:d");
    await server.follow("user:c", "user:d");
    await server.follow("user:c", "user:e");

    const follows = await server.follows("user:a");
    expect(follows).toEqual({
      results: [
        { source_group: "user", source_id: "a", target_group: "user", target_id: "c", created_at: ISO },
        edge,
      ],
      next: null,
    });
    const page1 = await server.follows("user:a", { limit: 1 });
    expect(page1.next).toEqual(expect.any(String));
    expect(await server.follows("user:a", { limit: 1, cursor: page1.next as string })).toEqual({ results: [edge], next: null });
    expect(await all((next) => server.followers("user:d", { limit: 1, next }))).toEqual([
      expect.objectContaining({ source_id: "c", target_id: "d" }),
      expect.objectContaining({ source_id: "b", target_id: "d" }),
    ]);
    expect(await server.stats("user:a")).toEqual({ feed: "user:a", follower_count: 0, following_count: 2 });
    expect(await user("z").stats("user:d")).toEqual({ feed: "user:d", follower_count: 2, following_count: 0 });

    const suggestions = await server.suggestions("user:a", { limit: 5 });
    expect(suggestions.results[0]).toEqual({ group: "user", id: "d", mutuals: 2 });
    expect(suggestions.results).toContainEqual({ group: "user", id: "e", mutuals: 1 });
    expect(suggestions.results.every((s) => s.group === "user" && !["a", "b", "c"].includes(s.id))).toBe(true);
    expect(suggestions).toEqual((await http("GET", "/v1/feeds/user/a/suggestions?limit=5", { token: (await server.getToken()) as string })).body);
    expect(await apiError(server.suggestions("user:a", { limit: 51 }))).toMatchObject({ code: "VALIDATION_FAILED" });

    // User tokens follow and unfollow only from feeds with their own id.
    const a = user("a");
    expect(await a.follow("timeline:a", "user:b")).toMatchObject({ source_group: "timeline", source_id: "a", target_id: "b" });
    expect(await apiError(a.follow("user:b", "user:x"))).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(await apiError(a.unfollow("user:b", "user:d"))).toMatchObject({ code: "FORBIDDEN" });
    const self = await apiError(server.follow("user:a", "user:a"));
    expect(self.fields.map((f) => f.path)).toEqual(["target"]);

    await expect(a.unfollow("timeline:a", "user:b", { keep_history: true })).resolves.toBeUndefined();
    await expect(server.unfollow("user:a", "user:b")).resolves.toBeUndefined();
    await expect(server.unfollow("user:a", { group: "user", id: "b" })).resolves.toBeUndefined(); // no edge: still 204
    expect(await server.stats("user:a")).toEqual({ feed: "user:a", follower_count: 0, following_count: 1 });
  });
});

describe("sdk: objects", () => {
  it("putObject, getObject, getObjects, patchObject, bulkObjects, deleteObject", async () => {
    const { t, server, user } = await sdkTenant();
    const created = await server.putObject("song", "1", { title: "One", tags: ["a"] });
    expect(created).toEqual({ type: "song", id: "1", custom: { title: "One", tags: ["a"] }, updated_at: ISO });
    const replaced = await server.putObject("song", "1", { title: "Uno" });
    expect(replaced).toEqual({ type: "song", id: "1", custom: { title: "Uno" }, updated_at: ISO });
    expect(await server.getObject("song", "1")).toEqual(replaced);
    expect(await user("u").getObject("song", "1")).toEqual(replaced);

    const patched = await server.patchObject("song", "1", { set: { "custom.year": 1999, "custom.meta.bpm": 120 }, unset: ["custom.title"] });
    expect(patched).toEqual({ type: "song", id: "1", custom: { year: 1999, meta: { bpm: 120 } }, updated_at: ISO });
    const badPatch = await apiError(server.patchObject("song", "1", { set: { year: 1 } }));
    expect(badPatch).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    expect(badPatch.fields.map((f) => f.path)).toEqual(["set.year"]);

    const bulk = await server.bulkObjects([
      { type: "song", id: "2", custom: {} },
      { type: "album", id: "x", custom: { a: 1 } },
    ]);
    expect(bulk).toEqual({
      results: [
        { type: "song", id: "2", custom: {}, updated_at: ISO },
        { type: "album", id: "x", custom: { a: 1 }, updated_at: ISO },
      ],
    });
    const bulkBad = await apiError(server.bulkObjects([{ type: "ok", id: "1", custom: {} }, { type: "bad type!", id: "1", custom: {} }]));
    expect(bulkBad.fields.map((f) => f.path)).toEqual(["objects.1.type"]);

    const many = await user("u").getObjects(["song:1", "album:x", "song:missing"]);
    expect(many).toEqual({ objects: { "song:1": patched, "album:x": bulk.results[1] } });
    expect(await apiError(server.getObjects(["not a ref"]))).toMatchObject({ code: "VALIDATION_FAILED" });

    const batch = await server.batchObjects([
      { type: "song", id: "3", custom: { b: 1 } },
      { type: "bad type!", id: "1", custom: {} },
    ]);
    expect(batch).toEqual({ results: [{ index: 0, ok: true }, { index: 1, ok: false, code: "VALIDATION_FAILED" }] });
    expect(await server.batchObjects([{ type: "song", id: "3", custom: { b: 1 } }])).toEqual({ results: [{ index: 0, ok: true }] });
    expect((await server.getObject("song", "3")).custom).toEqual({ b: 1 });

    await expect(server.deleteObject("song", "1")).resolves.toBeUndefined();
    expect(await apiError(server.getObject("song", "1"))).toMatchObject({ code: "NOT_FOUND", status: 404 });

    // Writes are server only.
    const userAsServer = new ServerClient({ baseUrl: baseUrl(), token: await t.user("u") });
    for (const call of [
      () => userAsServer.putObject("song", "9", {}),
      () => userAsServer.patchObject("song", "2", { set: { "custom.a": 1 } }),
      () => userAsServer.deleteObject("song", "2"),
      () => userAsServer.bulkObjects([{ type: "song", id: "9", custom: {} }]),
      () => userAsServer.batchObjects([{ type: "song", id: "9", custom: {} }]),
    ]) {
      expect(await apiError(call())).toMatchObject({ code: "FORBIDDEN", status: 403 });
    }
  });
});

describe("sdk: batch import", () => {
  it("batchFollows and batchActivities answer per-item results; an activity rerun is idempotent", async () => {
    const { server } = await sdkTenant();
    const follows = await server.batchFollows([
      { source: "user:a", target: "user:b" },
      { source: "user:a", target: "user:b" },
      { source: "nope", target: "user:b" },
      { source: "timeline:a", target: "user:b" },
    ]);
    expect(follows).toEqual({
      results: [
        { index: 0, ok: true },
        { index: 1, ok: true },
        { index: 2, ok: false, code: "VALIDATION_FAILED" },
        { index: 3, ok: true },
      ],
    });
    expect(await server.stats("user:b")).toMatchObject({ follower_count: 2 });

    const time = "2020-01-01T00:00:00.000Z";
    const items = [
      { feed: "user:imp", activity: { actor: "user:imp", verb: "post", object: "n:1", foreign_id: "i1", time, custom: { k: 1 } } },
      { feed: "bad feed", activity: { actor: "user:imp", verb: "post", object: "n:2" } },
      { feed: "user:imp", activity: { actor: "user:imp", verb: "post", object: "n:3", foreign_id: "i3", time } },
    ];
    const res = await server.batchActivities(items);
    expect(res).toEqual({
      results: [
        { index: 0, ok: true, id: anId },
        { index: 1, ok: false, code: "VALIDATION_FAILED" },
        { index: 2, ok: true, id: anId },
      ],
    });
    expect(await server.batchActivities(items)).toEqual(res);
    const imported = await server.getActivity(res.results[0]?.id as string);
    expect(imported).toMatchObject({ object: "n:1", time, custom: { k: 1 }, origin_feed: "user:imp", foreign_id: "i1" });

    for (const call of [() => server.batchFollows([]), () => server.batchActivities([]), () => server.batchObjects([]), () => server.batchUsers([])]) {
      expect(await apiError(call())).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    }
  });
});

describe("sdk: promoted activities", () => {
  it("createPromoted, listPromoted, retractPromoted; the sidecar follows the audience", async () => {
    const { t, server, user } = await sdkTenant();
    const targeted = await server.createPromoted({ actor: "brand:a", verb: "promote", object: "p:1", custom: { x: 1 }, audience: { users: ["u1"] } });
    expect(targeted).toEqual({
      id: anId,
      actor: "brand:a",
      verb: "promote",
      object: "p:1",
      custom: { x: 1 },
      promoted: true,
      audience: { users: ["u1"], feeds: [] },
      served_count: 0,
      created_at: ISO,
      retracted_at: null,
    });
    const open = await server.createPromoted({ actor: "brand:b", verb: "promote", object: "p:2" });
    expect(open).toMatchObject({ custom: {}, audience: null, served_count: 0, retracted_at: null });

    expect(await server.listPromoted()).toEqual({ results: [open, targeted], next: null });
    const p1 = await server.listPromoted({ limit: 1 });
    expect(p1.results).toEqual([open]);
    expect(await server.listPromoted({ limit: 1, next: p1.next })).toEqual({ results: [targeted], next: null });

    const forU1 = await user("u1").readFeed("user:zz");
    expect(forU1.promoted?.map((p) => p.id)).toEqual([open.id, targeted.id]);
    expect(forU1.promoted?.[1]).toEqual({ id: targeted.id, actor: "brand:a", verb: "promote", object: "p:1", custom: { x: 1 }, promoted: true });
    expect((await user("u2").readFeed("user:zz")).promoted?.map((p) => p.id)).toEqual([open.id]);

    await expect(server.retractPromoted(targeted.id)).resolves.toBeUndefined();
    expect(await apiError(server.retractPromoted(targeted.id))).toMatchObject({ code: "NOT_FOUND", status: 404 });
    expect(await apiError(server.retractPromoted("not-a-uuid"))).toMatchObject({ code: "NOT_FOUND" });
    expect((await user("u1").readFeed("user:zz")).promoted?.map((p) => p.id)).toEqual([open.id]);
    const listed = await server.listPromoted();
    expect(listed.results.find((p) => p.id === targeted.id)?.retracted_at).toEqual(ISO);

    const userAsServer = new ServerClient({ baseUrl: baseUrl(), token: await t.user("u1") });
    expect(await apiError(userAsServer.listPromoted())).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(await apiError(userAsServer.createPromoted({ actor: "a:b", verb: "v", object: "o" }))).toMatchObject({ code: "FORBIDDEN" });
    expect(await apiError(userAsServer.retractPromoted(open.id))).toMatchObject({ code: "FORBIDDEN" });
  });
});

describe("sdk: operator console", () => {
  it("login, me, tenant, team, invite, acceptInvite, changeRole, disable, enable, rotateSecret, logout", async () => {
    const { t, server } = await sdkTenant();
    const owner = await newOperator(t.id, "owner");
    const op = operatorClient();
    const denied = await apiError(op.login(owner.email, "not the password"));
    expect(denied).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(op.token).toBeUndefined();
    const invalidLogin = await apiError(op.login("not-an-email", "x"));
    expect(invalidLogin.fields.map((f) => f.path)).toEqual(["email"]);

    const session = await op.login(owner.email, PASSWORD);
    expect(session).toEqual({
      token: expect.any(String),
      expires_at: ISO,
      operator: { id: owner.id, name: expect.any(String), email: owner.email, role: "owner", tenant_id: t.id },
    });
    expect(op.token).toBe(session.token);
    expect(await op.me()).toEqual(session.operator);
    expect(await op.tenant()).toEqual({ id: t.id, name: expect.any(String), api_key: t.apiKey, status: "active", created_at: ISO, allowed_origins: [] });

    const email = uniqueEmail("mate");
    const invited = await op.invite({ email, name: "Mate", role: "member" });
    expect(invited).toEqual({
      teammate: { id: expect.any(String), email, name: "Mate", role: "member", status: "active", created_at: ISO, invite_pending: true },
      invite_token: expect.any(String),
      expires_at: ISO,
    });
    expect(await apiError(op.invite({ email, name: "Again", role: "member" }))).toMatchObject({ code: "CONFLICT", status: 409 });
    const mateId = invited.teammate.id;

    const mate = operatorClient();
    expect(await apiError(mate.acceptInvite(invited.invite_token, "short"))).toMatchObject({ code: "VALIDATION_FAILED" });
    const mateSession = await mate.acceptInvite(invited.invite_token, PASSWORD);
    expect(mateSession).toEqual({
      token: expect.any(String),
      expires_at: ISO,
      operator: { id: mateId, name: "Mate", email, role: "member", tenant_id: t.id },
    });
    expect(mate.token).toBe(mateSession.token);
    expect(await apiError(operatorClient().acceptInvite(invited.invite_token, PASSWORD))).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });

    const team = await op.team();
    expect(team.next).toBeNull();
    expect(team.results).toHaveLength(2);
    expect(team.results).toContainEqual({ ...invited.teammate, invite_pending: false });
    expect(team.results).toContainEqual(expect.objectContaining({ id: owner.id, role: "owner", status: "active", invite_pending: false }));
    expect(await all((next) => mate.team({ limit: 1, next }))).toEqual(team.results);

    // Owner-only operations.
    expect(await apiError(mate.rotateSecret())).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(await apiError(mate.invite({ email: uniqueEmail(), name: "X", role: "member" }))).toMatchObject({ code: "FORBIDDEN" });
    expect(await apiError(mate.disable(owner.id))).toMatchObject({ code: "FORBIDDEN" });

    expect(await op.changeRole(mateId, "owner")).toEqual({ ...invited.teammate, role: "owner", invite_pending: false });
    expect(await op.changeRole(mateId, "member")).toMatchObject({ role: "member" });
    expect(await apiError(op.changeRole(owner.id, "member"))).toMatchObject({ code: "FORBIDDEN" });
    expect(await apiError(op.changeRole("not-an-operator", "member"))).toMatchObject({ code: "FORBIDDEN" });

    expect(await op.disable(mateId)).toEqual({ ...invited.teammate, status: "disabled", invite_pending: false });
    expect(await apiError(mate.me())).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(await op.enable(mateId)).toEqual({ ...invited.teammate, status: "active", invite_pending: false });

    // Rotation: the old secret stops at once (the re-mint with it is refused too).
    expect(await server.stats("user:x")).toMatchObject({ feed: "user:x" });
    const rotated = await op.rotateSecret();
    expect(rotated).toEqual({ api_secret: expect.any(String) });
    expect(rotated.api_secret.length).toBeGreaterThanOrEqual(32);
    expect(await apiError(server.stats("user:x"))).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    const fresh = new ServerClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: rotated.api_secret });
    expect(await fresh.stats("user:x")).toMatchObject({ feed: "user:x" });

    await expect(op.logout()).resolves.toBeUndefined();
    expect(op.token).toBeUndefined();
    expect(await apiError(op.me())).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(await apiError(operatorClient(session.token).me())).toMatchObject({ code: "UNAUTHENTICATED" });
  });

  it("inspectUsers, inspectActivities, inspectFeed, inspectFollows, inspectFollowers, inspectStats", async () => {
    const { t, server } = await sdkTenant();
    const member = operatorClient((await newOperator(t.id, "member")).token);
    const staff = operatorClient(await staffToken());
    await server.upsertUser("u1", { secret: "custom is not listed" });
    await server.upsertUser("u2", {});
    await server.revokeTokens("u2");

    const users = await member.inspectUsers();
    expect(users).toEqual({
      results: [
        { id: "u2", created_at: ISO, updated_at: ISO, revoked_before: ISO },
        { id: "u1", created_at: ISO, updated_at: ISO, revoked_before: ISO },
      ],
      next: null,
    });
    expect(await all((next) => member.inspectUsers({ limit: 1, next }))).toEqual(users.results);

    const kept = await server.addActivity("user:u1", { actor: "user:u1", verb: "post", object: "o1", time: "2024-01-02T00:00:00.000Z", refs: ["post:none"] });
    const gone = await server.addActivity("user:u1", { actor: "user:u1", verb: "post", object: "o2", time: "2024-01-01T00:00:00.000Z" });
    await server.deleteActivity(gone.id);
    const activities = await member.inspectActivities();
    expect(activities.next).toBeNull();
    expect(activities.results).toEqual([
      { ...kept, deleted_at: null },
      { ...gone, version: 2, deleted_at: ISO },
    ]);
    expect(await all((next) => member.inspectActivities({ limit: 1, next }))).toEqual(activities.results);

    const feed = await member.inspectFeed("user:u1");
    expect(feed).toEqual(await server.readFeed("user:u1"));
    expect(feed.results).toEqual([kept]);
    expect(feed.objects).toEqual({});

    await server.follow("user:u1", "user:u2");
    await server.follow("topic:t", "user:u2");
    expect(await member.inspectFollows("user:u1")).toEqual(await server.follows("user:u1"));
    expect(await member.inspectFollowers({ group: "user", id: "u2" }, { limit: 1 })).toEqual(await server.followers("user:u2", { limit: 1 }));
    expect((await member.inspectFollowers("user:u2")).results).toHaveLength(2);
    expect(await member.inspectStats("user:u2")).toEqual({ feed: "user:u2", follower_count: 2, following_count: 0 });

    // Platform staff use the admin routes instead.
    for (const call of [
      () => staff.inspectUsers(),
      () => staff.inspectActivities(),
      () => staff.inspectFeed("user:u1"),
      () => staff.inspectFollows("user:u1"),
      () => staff.inspectStats("user:u1"),
      () => staff.tenant(),
      () => staff.team(),
    ]) {
      expect(await apiError(call())).toMatchObject({ code: "FORBIDDEN", status: 403 });
    }
    expect(await apiError(member.inspectActivities({ next: "!!bad!!" }))).toMatchObject({ code: "VALIDATION_FAILED" });
  });
});

describe("sdk: platform admin", () => {
  it("listTenants, createTenant, getTenant, suspend, reactivate, rotate, createTenantOperator, adminQueues", async () => {
    const staff = operatorClient(await staffToken());
    expect(await staff.me()).toMatchObject({ role: "staff", tenant_id: null });

    const name = `sdk-admin-${Date.now()}`;
    const created = await staff.createTenant({ name, rate_limit_per_minute: 1000 });
    expect(created).toEqual({
      tenant: { id: expect.any(String), name, api_key: expect.any(String), status: "active", created_at: ISO, rate_limit_per_minute: 1000, allowed_origins: [] },
      api_secret: expect.any(String),
    });
    expect(created.api_secret.length).toBeGreaterThanOrEqual(32);
    const id = created.tenant.id;
    expect(await staff.getTenant(id)).toEqual(created.tenant);
    const defaults = await staff.createTenant({ name: `${name}-default` });
    expect(defaults.tenant.rate_limit_per_minute).toBeNull();

    const firstPage = await staff.listTenants({ limit: 2 });
    expect(firstPage.results).toEqual([defaults.tenant, created.tenant]);
    expect(firstPage.next).toEqual(expect.any(String));
    const second = await staff.listTenants({ limit: 1, cursor: firstPage.next as string });
    expect(second.results).toHaveLength(1);
    expect(second.results[0]?.id).not.toBe(id);

    const server = new ServerClient({ baseUrl: baseUrl(), apiKey: created.tenant.api_key, apiSecret: created.api_secret });
    expect(await server.stats("user:x")).toMatchObject({ follower_count: 0 });
    expect(await staff.suspendTenant(id)).toEqual({ ...created.tenant, status: "suspended" });
    expect(await apiError(server.stats("user:x"))).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(await staff.reactivateTenant(id)).toEqual(created.tenant);
    expect(await server.stats("user:x")).toMatchObject({ follower_count: 0 });

    const rotated = await staff.rotateTenantSecret(id);
    expect(rotated).toEqual({ api_secret: expect.any(String) });
    expect(rotated.api_secret).not.toBe(created.api_secret);
    expect(await apiError(server.stats("user:x"))).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(await new ServerClient({ baseUrl: baseUrl(), apiKey: created.tenant.api_key, apiSecret: rotated.api_secret }).stats("user:x")).toMatchObject({ feed: "user:x" });
    expect(JSON.stringify(await staff.getTenant(id))).not.toContain(rotated.api_secret);

    const email = uniqueEmail("first-owner");
    const invite = await staff.createTenantOperator(id, { email, name: "First Owner", role: "owner" });
    expect(invite).toEqual({
      teammate: { id: expect.any(String), email, name: "First Owner", role: "owner", status: "active", created_at: ISO, invite_pending: true },
      invite_token: expect.any(String),
      expires_at: ISO,
    });
    const owner = operatorClient();
    expect((await owner.acceptInvite(invite.invite_token, PASSWORD)).operator).toEqual({ id: invite.teammate.id, name: "First Owner", email, role: "owner", tenant_id: id });
    expect(await owner.tenant()).toEqual({ id, name, api_key: created.tenant.api_key, status: "active", created_at: created.tenant.created_at, allowed_origins: [] });

    expect(await staff.adminQueues()).toEqual({
      queues: [
        { queue: "fanout", pending: expect.any(Number), dlq_depth: expect.any(Number) },
        { queue: "notify", pending: expect.any(Number), dlq_depth: expect.any(Number) },
        { queue: "webhooks", pending: expect.any(Number), dlq_depth: expect.any(Number) },
      ],
    });

    // Admin routes: staff only (others 403, no session 401).
    for (const call of [
      () => owner.listTenants(),
      () => owner.getTenant(id),
      () => owner.suspendTenant(id),
      () => owner.rotateTenantSecret(id),
      () => owner.createTenantOperator(id, { email: uniqueEmail(), name: "X", role: "member" }),
      () => owner.adminQueues(),
      () => owner.createTenant({ name: "x" }),
    ]) {
      expect(await apiError(call())).toMatchObject({ code: "FORBIDDEN", status: 403 });
    }
    expect(await apiError(operatorClient().listTenants())).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(await apiError(staff.createTenant({ name: "" }))).toMatchObject({ code: "VALIDATION_FAILED" });
    expect(await apiError(staff.getTenant("no-such-tenant"))).toMatchObject({ code: "NOT_FOUND", status: 404 });
  });
});
