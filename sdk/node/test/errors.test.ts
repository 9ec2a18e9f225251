import { afterEach, describe, expect, it } from "vitest";
import { FeedsApiError, HttpClient, isFeedsApiError, parseRetryAfter } from "../src/index.js";
import { deadBaseUrl, envelope, startFakeServer, type FakeReply, type FakeServer } from "./fake-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function failWith(reply: FakeReply, path = "/v1/thing?x=1"): Promise<FeedsApiError> {
  server = await startFakeServer([reply]);
  const http = new HttpClient({ baseUrl: server.baseUrl, token: "t", maxRetries: 0 });
  const err = await http.call({ method: "GET", path }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FeedsApiError);
  return err as FeedsApiError;
}

describe("FeedsApiError from the error envelope", () => {
  it("carries code, status, message, requestId, fields and url", async () => {
    const err = await failWith({
      status: 400,
      body: envelope("VALIDATION_FAILED", "request validation failed", {
        fields: [
          { path: "verb", message: "required" },
          { path: "", message: "body too large" },
        ],
      }),
    });
    expect(err).toBeInstanceOf(Error);
    expect(isFeedsApiError(err)).toBe(true);
    expect(err.name).toBe("FeedsApiError");
    expect(err.code).toBe("VALIDATION_FAILED");
    expect(err.status).toBe(400);
    expect(err.message).toBe("request validation failed");
    expect(err.requestId).toBe("req-123");
    expect(err.fields).toEqual([
      { path: "verb", message: "required" },
      { path: "", message: "body too large" },
    ]);
    expect(err.url).toBe(`${server?.baseUrl}/v1/thing?x=1`);
    expect(err.method).toBe("GET");
    expect(err.retryAfterSeconds).toBeUndefined();
    expect(err.retryable).toBe(false);
  });

  it("fields is [] when the envelope has none", async () => {
    const err = await failWith({ status: 404, body: envelope("NOT_FOUND") });
    expect(err.code).toBe("NOT_FOUND");
    expect(err.fields).toEqual([]);
  });

  it("reads Retry-After of a 429 into retryAfterSeconds", async () => {
    const err = await failWith({
      status: 429,
      headers: { "retry-after": "7" },
      body: envelope("RATE_LIMITED"),
    });
    expect(err.code).toBe("RATE_LIMITED");
    expect(err.status).toBe(429);
    expect(err.retryAfterSeconds).toBe(7);
    expect(err.retryable).toBe(true);
  });

  it("falls back to the x-request-id header for requestId", async () => {
    const err = await failWith({
      status: 403,
      headers: { "x-request-id": "hdr-9" },
      body: { error: { code: "FORBIDDEN", message: "no" } },
    });
    expect(err.code).toBe("FORBIDDEN");
    expect(err.requestId).toBe("hdr-9");
  });

  it("a non-JSON body (proxy 502) is INTERNAL with the status kept", async () => {
    const err = await failWith({ status: 502, headers: { "content-type": "text/html" }, body: "<h1>Bad Gateway</h1>" });
    expect(err.code).toBe("INTERNAL");
    expect(err.status).toBe(502);
    expect(err.requestId).toBe("");
    expect(err.fields).toEqual([]);
  });

  it("an unexpected JSON body is INTERNAL with the status kept", async () => {
    const err = await failWith({ status: 500, body: { message: "boom", statusCode: 500 } });
    expect(err.code).toBe("INTERNAL");
    expect(err.status).toBe(500);
  });

  it("an envelope-less answer with a status of the interface's table gets that status's code", async () => {
    // e.g. a framework's default 404 page for a route that does not exist yet
    const err = await failWith({ status: 404, body: { message: "Route GET:/v1/x not found", statusCode: 404 } });
    expect(err.code).toBe("NOT_FOUND");
    expect(err.status).toBe(404);
    expect(err.retryable).toBe(false);
  });

  it("a network failure is INTERNAL with status 0 and the url", async () => {
    const base = await deadBaseUrl();
    const http = new HttpClient({ baseUrl: base, maxRetries: 0 });
    const err = (await http.call({ method: "GET", path: "/v1/health" }).catch((e: unknown) => e)) as FeedsApiError;
    expect(err).toBeInstanceOf(FeedsApiError);
    expect(err.code).toBe("INTERNAL");
    expect(err.status).toBe(0);
    expect(err.url).toBe(`${base}/v1/health`);
    expect(err.cause).toBeDefined();
  });

  it("a timeout is INTERNAL with status 0", async () => {
    server = await startFakeServer([{ status: 200, hang: true }]);
    const http = new HttpClient({ baseUrl: server.baseUrl, maxRetries: 0, timeoutMs: 150 });
    const err = (await http.call({ method: "GET", path: "/slow" }).catch((e: unknown) => e)) as FeedsApiError;
    expect(err.code).toBe("INTERNAL");
    expect(err.status).toBe(0);
    expect(err.message).toMatch(/timed out/);
  });
});

describe("parseRetryAfter", () => {
  it("parses seconds and HTTP dates", () => {
    expect(parseRetryAfter("3")).toBe(3);
    expect(parseRetryAfter("0")).toBe(0);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter("soon")).toBeUndefined();
    const inFive = new Date(Date.now() + 5_000).toUTCString();
    const s = parseRetryAfter(inFive) ?? -1;
    expect(s).toBeGreaterThanOrEqual(4);
    expect(s).toBeLessThanOrEqual(6);
    expect(parseRetryAfter(new Date(Date.now() - 60_000).toUTCString())).toBe(0);
  });
});

describe("FeedsApiError.code", () => {
  it("is one of the interface's codes: an unknown code becomes its status's code, rawCode keeps it", () => {
    const of = (status: number, code: string) =>
      FeedsApiError.fromResponse({ status, headers: new Headers(), bodyText: JSON.stringify({ error: { code, message: "m" } }), url: "http://x/" });
    expect(of(404, "NOT_FOUND")).toMatchObject({ code: "NOT_FOUND", rawCode: "NOT_FOUND" });
    expect(of(404, "GONE_FOREVER")).toMatchObject({ code: "NOT_FOUND", rawCode: "GONE_FOREVER" });
    expect(of(418, "TEAPOT")).toMatchObject({ code: "INTERNAL", rawCode: "TEAPOT" });
  });
});
