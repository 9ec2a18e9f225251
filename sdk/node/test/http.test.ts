import { afterEach, describe, expect, it } from "vitest";
import { FeedsApiError, HttpClient } from "../src/index.js";
import { envelope, startFakeServer, type FakeReply, type FakeServer } from "./fake-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const ok: FakeReply = { status: 200, body: { ok: true } };

/** An HttpClient whose waits are recorded instead of slept. */
function recordingClient(baseUrl: string, extra: Partial<ConstructorParameters<typeof HttpClient>[0]> = {}) {
  const sleeps: number[] = [];
  const http = new HttpClient({
    baseUrl,
    token: "tok",
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...extra,
  });
  return { http, sleeps };
}

describe("retry policy", () => {
  it("retries a 429 after the Retry-After wait (real clock) and then succeeds", async () => {
    server = await startFakeServer([
      { status: 429, headers: { "retry-after": "1" }, body: envelope("RATE_LIMITED") },
      ok,
    ]);
    const http = new HttpClient({ baseUrl: server.baseUrl, token: "tok" });
    const started = Date.now();
    const body = await http.call<{ ok: boolean }>({ method: "GET", path: "/v1/x" });
    const elapsed = Date.now() - started;
    expect(body).toEqual({ ok: true });
    expect(server.requests).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(950);
    const gap = (server.requests[1]?.at ?? 0) - (server.requests[0]?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(950);
  });

  it("waits exactly the Retry-After value (injected sleep)", async () => {
    server = await startFakeServer([
      { status: 429, headers: { "retry-after": "2" }, body: envelope("RATE_LIMITED") },
      { status: 429, headers: { "retry-after": "0" }, body: envelope("RATE_LIMITED") },
      ok,
    ]);
    const { http, sleeps } = recordingClient(server.baseUrl);
    await expect(http.call({ method: "POST", path: "/v1/x", body: { a: 1 } })).resolves.toEqual({ ok: true });
    expect(sleeps).toEqual([2000, 0]);
    expect(server.requests.map((r) => r.json)).toEqual([{ a: 1 }, { a: 1 }, { a: 1 }]);
  });

  it("retries INTERNAL with exponential backoff and jitter", async () => {
    server = await startFakeServer([
      { status: 500, body: envelope("INTERNAL") },
      { status: 500, body: envelope("INTERNAL") },
      { status: 503, body: "upstream down" },
      ok,
    ]);
    const { http, sleeps } = recordingClient(server.baseUrl);
    await expect(http.call({ method: "GET", path: "/v1/x" })).resolves.toEqual({ ok: true });
    expect(server.requests).toHaveLength(4);
    expect(sleeps).toHaveLength(3);
    const [a = -1, b = -1, c = -1] = sleeps;
    expect(a).toBeGreaterThanOrEqual(50);
    expect(a).toBeLessThanOrEqual(100);
    expect(b).toBeGreaterThanOrEqual(100);
    expect(b).toBeLessThanOrEqual(200);
    expect(c).toBeGreaterThanOrEqual(200);
    expect(c).toBeLessThanOrEqual(400);
  });

  it("caps the backoff", async () => {
    server = await startFakeServer([{ status: 500, body: envelope("INTERNAL") }]);
    const { http, sleeps } = recordingClient(server.baseUrl, { maxRetries: 6, retryMaxDelayMs: 300 });
    await expect(http.call({ method: "GET", path: "/v1/x" })).rejects.toMatchObject({ code: "INTERNAL" });
    expect(sleeps).toHaveLength(6);
    for (const ms of sleeps) expect(ms).toBeLessThanOrEqual(300);
  });

  it("retries a network failure (INTERNAL, status 0)", async () => {
    server = await startFakeServer([{ status: 200, destroy: true }, ok]);
    const { http, sleeps } = recordingClient(server.baseUrl);
    await expect(http.call({ method: "GET", path: "/v1/x" })).resolves.toEqual({ ok: true });
    expect(server.requests).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
  });

  it.each([
    [400, "VALIDATION_FAILED"],
    [401, "UNAUTHENTICATED"],
    [403, "FORBIDDEN"],
    [404, "NOT_FOUND"],
    [409, "CONFLICT"],
    [422, "CONTENT_REJECTED"],
  ])("never retries %i %s", async (status, code) => {
    server = await startFakeServer([{ status, body: envelope(code) }, ok]);
    const { http, sleeps } = recordingClient(server.baseUrl);
    const err = (await http.call({ method: "POST", path: "/v1/x", body: {} }).catch((e: unknown) => e)) as FeedsApiError;
    expect(err).toBeInstanceOf(FeedsApiError);
    expect(err.code).toBe(code);
    expect(err.status).toBe(status);
    expect(server.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("stops after maxRetries (default 3) and throws the last error", async () => {
    server = await startFakeServer([{ status: 500, headers: { "x-request-id": "r1" }, body: envelope("INTERNAL", "boom") }]);
    const { http, sleeps } = recordingClient(server.baseUrl);
    const err = (await http.call({ method: "GET", path: "/v1/x" }).catch((e: unknown) => e)) as FeedsApiError;
    expect(err.code).toBe("INTERNAL");
    expect(err.message).toBe("boom");
    expect(server.requests).toHaveLength(4);
    expect(sleeps).toHaveLength(3);
  });

  it("stops after a custom maxRetries; 0 disables retrying", async () => {
    server = await startFakeServer([{ status: 429, headers: { "retry-after": "0" }, body: envelope("RATE_LIMITED") }]);
    const one = recordingClient(server.baseUrl, { maxRetries: 1 });
    await expect(one.http.call({ method: "GET", path: "/a" })).rejects.toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: 0 });
    expect(server.requests).toHaveLength(2);

    const none = recordingClient(server.baseUrl, { maxRetries: 0 });
    await expect(none.http.call({ method: "GET", path: "/b" })).rejects.toMatchObject({ code: "RATE_LIMITED" });
    expect(server.requests).toHaveLength(3);
    expect(none.sleeps).toEqual([]);

    // per-call override
    await expect(one.http.call({ method: "GET", path: "/c", maxRetries: 0 })).rejects.toMatchObject({ code: "RATE_LIMITED" });
    expect(server.requests).toHaveLength(4);
  });

  it("refreshes the token once after UNAUTHENTICATED only when enabled", async () => {
    server = await startFakeServer((req) =>
      req.headers.authorization === "Bearer fresh" ? ok : { status: 401, body: envelope("UNAUTHENTICATED") },
    );
    const calls: boolean[] = [];
    const http = new HttpClient({
      baseUrl: server.baseUrl,
      refreshOnUnauthenticated: true,
      token: ({ refresh }) => {
        calls.push(refresh);
        return refresh ? "fresh" : "stale";
      },
    });
    await expect(http.call({ method: "GET", path: "/v1/me" })).resolves.toEqual({ ok: true });
    expect(calls).toEqual([false, true]);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(["Bearer stale", "Bearer fresh"]);
  });
  it("after the refresh, later retries reuse the token source without forcing another refresh", async () => {
    server = await startFakeServer([
      { status: 401, body: envelope("UNAUTHENTICATED") },
      { status: 500, body: envelope("INTERNAL") },
      ok,
    ]);
    const calls: boolean[] = [];
    const { http } = recordingClient(server.baseUrl, {
      refreshOnUnauthenticated: true,
      token: ({ refresh }) => {
        calls.push(refresh);
        return "t";
      },
    });
    await expect(http.call({ method: "GET", path: "/v1/me" })).resolves.toEqual({ ok: true });
    expect(calls).toEqual([false, true, false]);
    expect(server.requests).toHaveLength(3);
  });
});

describe("request core", () => {
  it("sends JSON, the bearer token from an async provider, and skips undefined query values", async () => {
    server = await startFakeServer([{ status: 201, body: { id: "a1" } }]);
    const http = new HttpClient({ baseUrl: `${server.baseUrl}/`, token: async () => "async-tok" });
    const out = await http.call({
      method: "POST",
      path: "/v1/things",
      query: { limit: 5, next: undefined, cursor: null, flag: false, refs: ["a:1", "b:2"] },
      body: { verb: "post", n: 1 },
    });
    expect(out).toEqual({ id: "a1" });
    const req = server.requests[0];
    expect(req?.method).toBe("POST");
    expect(req?.path).toBe("/v1/things");
    expect(Object.fromEntries(req?.query ?? [])).toEqual({ limit: "5", flag: "false", refs: "a:1,b:2" });
    expect(req?.headers.authorization).toBe("Bearer async-tok");
    expect(req?.headers["content-type"]).toBe("application/json");
    expect(req?.json).toEqual({ verb: "post", n: 1 });
  });

  it("resolves undefined for 204 and sends no body or content-type without one", async () => {
    server = await startFakeServer([{ status: 204 }]);
    const http = new HttpClient({ baseUrl: server.baseUrl, token: "t" });
    await expect(http.call({ method: "DELETE", path: "/v1/a/1" })).resolves.toBeUndefined();
    expect(server.requests[0]?.headers["content-type"]).toBeUndefined();
    expect(server.requests[0]?.body).toBe("");
  });

  it("auth: false sends no Authorization header", async () => {
    server = await startFakeServer([ok]);
    const http = new HttpClient({ baseUrl: server.baseUrl, token: "t" });
    await http.call({ method: "GET", path: "/v1/health", auth: false });
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
  });

  it("send() treats 304 as success and exposes headers", async () => {
    server = await startFakeServer([{ status: 304, headers: { etag: '"v1"' } }]);
    const http = new HttpClient({ baseUrl: server.baseUrl, token: "t" });
    const res = await http.send({ method: "GET", path: "/v1/feeds/user/1/signal", headers: { "if-none-match": '"v1"' } });
    expect(res.status).toBe(304);
    expect(res.headers.get("etag")).toBe('"v1"');
    expect(server.requests[0]?.headers["if-none-match"]).toBe('"v1"');
  });
});

describe("raw()", () => {
  it("returns status, headers and body without throwing or retrying", async () => {
    server = await startFakeServer([
      { status: 429, headers: { "retry-after": "30", "x-request-id": "rid-1" }, body: envelope("RATE_LIMITED") },
      ok,
    ]);
    const http = new HttpClient({ baseUrl: server.baseUrl, token: "t" });
    const res = await http.raw({ method: "GET", path: "/v1/feeds/user/1", query: { limit: 1 } });
    expect(res.status).toBe(429);
    expect(res.ok).toBe(false);
    expect(res.headers.get("Retry-After")).toBe("30");
    expect(res.headers.get("x-request-id")).toBe("rid-1");
    expect(res.body).toEqual(envelope("RATE_LIMITED"));
    expect(res.url).toBe(`${server.baseUrl}/v1/feeds/user/1?limit=1`);
    expect(server.requests).toHaveLength(1);
  });

  it("sends string bodies verbatim and honours an explicit authorization header", async () => {
    server = await startFakeServer([{ status: 400, body: "not json at all" }]);
    const http = new HttpClient({ baseUrl: server.baseUrl, token: "t" });
    const res = await http.raw({
      method: "POST",
      path: "/v1/x",
      body: "{broken",
      headers: { Authorization: "Bearer other" },
    });
    expect(res.status).toBe(400);
    expect(res.body).toBe("not json at all");
    expect(res.text).toBe("not json at all");
    expect(server.requests[0]?.body).toBe("{broken");
    expect(server.requests[0]?.headers.authorization).toBe("Bearer other");
    expect(server.requests[0]?.headers["content-type"]).toBe("application/json");
  });
});
