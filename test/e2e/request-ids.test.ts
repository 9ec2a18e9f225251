import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { baseUrl, envelope, http, newTenant } from "../support/api.js";

// X-Request-Id both ways through the real gateway (contract section 6): a client's id of 1 to 128
// characters from [A-Za-z0-9._:-] is the request's id, echoed in the header of every answer and
// in every envelope; any other value is replaced by a generated one.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** One request written byte for byte on a socket (what fetch refuses to send); answers status and headers. */
function rawRequest(head: string): Promise<{ status: number; headers: Map<string, string[]>; body: string }> {
  const url = new URL(baseUrl());
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("end", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      const [top = "", body = ""] = text.split("\r\n\r\n");
      const [statusLine = "", ...lines] = top.split("\r\n");
      const headers = new Map<string, string[]>();
      for (const l of lines) {
        const at = l.indexOf(":");
        const name = l.slice(0, at).toLowerCase();
        headers.set(name, [...(headers.get(name) ?? []), l.slice(at + 1).trim()]);
      }
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body });
    });
    socket.write(Buffer.from(`${head}\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`, "latin1"));
  });
}

describe("X-Request-Id", () => {
  it("a client's id is the request's: echoed on success and on every kind of error, in header and envelope", async () => {
    const t = await newTenant();
    const server = await t.server();
    const cases: [string, string, Record<string, unknown>, number][] = [
      ["GET", "/v1/health", {}, 200],
      ["GET", "/v1/nowhere", {}, 404],
      ["GET", "/v1/me", {}, 401],
      ["POST", "/v1/feeds/user/a/activities", { token: server, body: { verb: "" } }, 400],
      ["POST", "/v1/feeds/user/a/activities", { token: server, rawBody: JSON.stringify({ x: "y".repeat(1024 * 1024) }) }, 400],
      // A preflight (docs/cors.md): answered 204, with CORS headers only for an allowed origin.
      ["OPTIONS", "/v1/feeds/user/a", {}, 204],
    ];
    for (const [i, [method, path, opts, status]] of cases.entries()) {
      const id = `client.${i}:req-${"a".repeat(100)}`;
      const res = await http(method, path, { ...opts, headers: { "x-request-id": id } });
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(res.headers.get("x-request-id"), `${method} ${path}`).toBe(id);
      if (status >= 400 && method !== "OPTIONS") expect(envelope(res).requestId).toBe(id);
    }
  });

  it("takes 128 characters and __proto__ (only ever a string value); replaces 129 characters and other characters", async () => {
    for (const id of ["x".repeat(128), "__proto__", "constructor"]) {
      const res = await http("GET", "/v1/nowhere", { headers: { "x-request-id": id } });
      expect(res.headers.get("x-request-id")).toBe(id);
      expect(envelope(res).requestId).toBe(id);
    }
    for (const id of ["x".repeat(129), "a b", "a/b", "<script>", "a,b"]) {
      const res = await http("GET", "/v1/nowhere", { headers: { "x-request-id": id } });
      expect(res.headers.get("x-request-id"), id).toMatch(UUID);
      expect(envelope(res).requestId).toBe(res.headers.get("x-request-id"));
    }
  });

  it("replaces a repeated header, non-ASCII bytes and an empty value; a CRLF in it cannot add an answer header", async () => {
    for (const head of [
      "GET /v1/nowhere HTTP/1.1\r\nX-Request-Id: one\r\nX-Request-Id: two",
      "GET /v1/nowhere HTTP/1.1\r\nX-Request-Id: one\r\nX-Request-Id: one",
      `GET /v1/nowhere HTTP/1.1\r\nX-Request-Id: ${Buffer.from("caf\u00e9", "utf8").toString("latin1")}`,
      "GET /v1/nowhere HTTP/1.1\r\nX-Request-Id: ",
    ]) {
      const res = await rawRequest(head);
      expect(res.status, head).toBe(404);
      const ids = res.headers.get("x-request-id") ?? [];
      expect(ids, head).toHaveLength(1);
      expect(ids[0]).toMatch(UUID);
      expect((JSON.parse(res.body) as { error: { requestId: string } }).error.requestId).toBe(ids[0]);
    }
    // A CRLF ends the header: what follows is a header of the request, never of the answer.
    const split = await rawRequest("GET /v1/nowhere HTTP/1.1\r\nX-Request-Id: abc\r\nSet-Cookie: stolen=1");
    expect(split.headers.get("x-request-id")).toEqual(["abc"]);
    expect(split.headers.has("set-cookie")).toBe(false);
    // A bare CR is refused by the HTTP parser: 400 in the envelope, under an id of the gateway's.
    const bare = await rawRequest("GET /v1/nowhere HTTP/1.1\r\nX-Request-Id: ab\rc");
    expect(bare.status).toBe(400);
    expect(bare.headers.get("x-request-id")?.[0]).toMatch(UUID);
  });
});
