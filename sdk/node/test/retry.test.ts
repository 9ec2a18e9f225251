import { afterEach, describe, expect, it } from "vitest";
import { FeedsApiError, ServerClient, UserClient } from "../src/index.js";
import { UserClient as BrowserUserClient } from "@feeds/client";
import { envelope, startFakeServer, type FakeReply, type FakeServer } from "./fake-server.js";

// The safe-retry policy against a fault-injecting server that answers 500 INTERNAL to the first
// request and succeeds after: what may be sent twice is, and what may not is sent exactly once.

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const fail500: FakeReply = { status: 500, body: envelope("INTERNAL") };
const created: FakeReply = { status: 201, body: { id: "x" } };
const noWait = { sleep: async () => {}, token: "tok" } as const;

/** A server answering 500 once, then `then`. */
async function failOnce(then: FakeReply = created): Promise<FakeServer> {
  return startFakeServer([fail500, then]);
}

describe("safe retries", () => {
  it("never retries a POST without a dedupe identity or key: exactly one attempt", async () => {
    server = await failOnce();
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait });
    const error = await client.addComment("a1", { text: "hi", user_id: "u" }, { idempotencyKey: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FeedsApiError);
    expect((error as FeedsApiError).code).toBe("INTERNAL");
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers["idempotency-key"]).toBeUndefined();
  });

  it("with idempotencyKeys: false on the client, a POST and a PATCH go once", async () => {
    server = await startFakeServer([fail500]);
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait, idempotencyKeys: false });
    await expect(client.createWebhook({ url: "https://example.com/h" })).rejects.toBeInstanceOf(FeedsApiError);
    await expect(client.patchActivity("a1", { set: { "custom.a": 1 } })).rejects.toBeInstanceOf(FeedsApiError);
    expect(server.requests.map((r) => r.method)).toEqual(["POST", "PATCH"]);
  });

  it("retries a GET", async () => {
    server = await failOnce({ status: 200, body: { results: [], next: null } });
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait });
    await expect(client.readFeed("user:1")).resolves.toEqual({ results: [], next: null });
    expect(server.requests.map((r) => r.method)).toEqual(["GET", "GET"]);
    expect(server.requests[0]?.headers["idempotency-key"]).toBeUndefined();
  });

  it("retries PUT and DELETE", async () => {
    server = await startFakeServer((_req, i) => (i % 2 === 0 ? fail500 : { status: i === 1 ? 200 : 204, body: i === 1 ? { id: "u1" } : undefined }));
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait });
    await client.upsertUser("u1", {});
    await client.deleteActivity("a1");
    expect(server.requests.map((r) => r.method)).toEqual(["PUT", "PUT", "DELETE", "DELETE"]);
  });

  it("sends a generated Idempotency-Key with a POST and retries it with the same key", async () => {
    server = await failOnce();
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait });
    await client.addComment("a1", { text: "hi", user_id: "u" });
    const keys = server.requests.map((r) => r.headers["idempotency-key"]);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
  });

  it("a key passed by the caller is the one sent, on every attempt", async () => {
    server = await failOnce();
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait });
    await client.createPromoted({ activity: { actor: "a", verb: "v", object: "o" } } as never, { idempotencyKey: "order-42" });
    expect(server.requests.map((r) => r.headers["idempotency-key"])).toEqual(["order-42", "order-42"]);
  });

  it("each call gets a fresh key", async () => {
    server = await startFakeServer([created]);
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait });
    await client.addComment("a1", { text: "one", user_id: "u" });
    await client.addComment("a1", { text: "two", user_id: "u" });
    const [a, b] = server.requests.map((r) => r.headers["idempotency-key"]);
    expect(a).not.toBe(b);
  });

  it("retries an activity with foreign_id and time even without a key", async () => {
    server = await failOnce();
    const client = new ServerClient({ baseUrl: server.baseUrl, ...noWait, idempotencyKeys: false });
    await client.addActivity("user:1", { actor: "u", verb: "post", object: "o", foreign_id: "f1", time: "2026-01-01T00:00:00Z" });
    expect(server.requests).toHaveLength(2);
    await server.close();
    server = await failOnce();
    const again = new ServerClient({ baseUrl: server.baseUrl, ...noWait, idempotencyKeys: false });
    await expect(again.addActivity("user:1", { actor: "u", verb: "post", object: "o", foreign_id: "f2" })).rejects.toBeInstanceOf(FeedsApiError);
    expect(server.requests).toHaveLength(1);
  });

  it("does not wait a Retry-After longer than maxRetryAfterSeconds (default 60): throws at once", async () => {
    server = await startFakeServer([{ status: 429, headers: { "retry-after": "3600" }, body: envelope("RATE_LIMITED") }, { status: 200, body: {} }]);
    const sleeps: number[] = [];
    const client = new ServerClient({ baseUrl: server.baseUrl, token: "tok", sleep: async (ms) => void sleeps.push(ms) });
    const error = (await client.getActivity("a1").catch((e: unknown) => e)) as FeedsApiError;
    expect(error.code).toBe("RATE_LIMITED");
    expect(error.retryAfterSeconds).toBe(3600);
    expect(sleeps).toEqual([]);
    expect(server.requests).toHaveLength(1);

    await server.close();
    server = await startFakeServer([{ status: 429, headers: { "retry-after": "3600" }, body: envelope("RATE_LIMITED") }, { status: 200, body: {} }]);
    const patient = new ServerClient({ baseUrl: server.baseUrl, token: "tok", sleep: async (ms) => void sleeps.push(ms), maxRetryAfterSeconds: 3600 });
    await expect(patient.getActivity("a1")).resolves.toEqual({});
    expect(sleeps).toEqual([3_600_000]);
  });

  it("a signal aborts the wait before a retry and the request in flight", async () => {
    server = await startFakeServer([{ status: 429, headers: { "retry-after": "30" }, body: envelope("RATE_LIMITED") }]);
    const client = new ServerClient({ baseUrl: server.baseUrl, token: "tok" });
    const controller = new AbortController();
    const started = Date.now();
    const pending = client.getActivity("a1", { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const error = (await pending.catch((e: unknown) => e)) as Error;
    expect(error.name).toBe("AbortError");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(server.requests).toHaveLength(1);

    await server.close();
    server = await startFakeServer([{ status: 200, hang: true }]);
    const hung = new ServerClient({ baseUrl: server.baseUrl, token: "tok" });
    const c2 = new AbortController();
    const inFlight = hung.readFeed("user:1", {}, { signal: c2.signal });
    setTimeout(() => c2.abort(new Error("user left")), 200);
    await expect(inFlight).rejects.toThrow("user left");
  });

  it("the browser client asks its tokenProvider for the first request and once more after a 401", async () => {
    server = await startFakeServer((req) =>
      req.headers.authorization === "Bearer t2" ? { status: 200, body: { id: "u1" } } : { status: 401, body: envelope("UNAUTHENTICATED") },
    );
    let calls = 0;
    const client = new BrowserUserClient({ baseUrl: server.baseUrl, tokenProvider: async () => `t${++calls}` });
    await expect(client.me()).resolves.toEqual({ id: "u1" });
    await expect(client.me()).resolves.toEqual({ id: "u1" });
    expect(calls).toBe(2);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(["Bearer t1", "Bearer t2", "Bearer t2"]);

    // A later expiry asks again: the provider is asked once per refused token, not once per client.
    await server.close();
    let valid = 1;
    server = await startFakeServer((req) =>
      req.headers.authorization === `Bearer v${valid}` ? { status: 200, body: { id: "u1" } } : { status: 401, body: envelope("UNAUTHENTICATED") },
    );
    let issued = 0;
    const renewing = new BrowserUserClient({ baseUrl: server.baseUrl, tokenProvider: async () => `v${++issued}` });
    await renewing.me();
    valid = 2;
    await Promise.all([renewing.me(), renewing.me()]);
    valid = 3;
    await renewing.me();
    expect(issued).toBe(3);

    // A provider whose new token is refused too: one more call, then the 401 is thrown.
    await server.close();
    server = await startFakeServer([{ status: 401, body: envelope("UNAUTHENTICATED") }]);
    let asked = 0;
    const refused = new BrowserUserClient({ baseUrl: server.baseUrl, tokenProvider: async () => `r${++asked}` });
    await expect(refused.me()).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect(asked).toBe(2);
    expect(server.requests).toHaveLength(2);
  });

  it("pages with an async iterator until next is null", async () => {
    server = await startFakeServer((req) =>
      req.query.get("next") === "p2" ? { status: 200, body: { results: [{ id: "c" }], next: null } } : { status: 200, body: { results: [{ id: "a" }, { id: "b" }], next: "p2" } },
    );
    const client = new UserClient({ baseUrl: server.baseUrl, token: "tok" });
    const ids: string[] = [];
    for await (const a of client.feed("timeline:1").all({ limit: 2 })) ids.push(a.id);
    expect(ids).toEqual(["a", "b", "c"]);
    expect(server.requests.map((r) => r.query.get("limit"))).toEqual(["2", "2"]);
  });
});
