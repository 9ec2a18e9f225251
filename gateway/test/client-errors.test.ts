import { connect } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { installErrorHandling, serverOptions } from "../src/http.js";

// What no route sees: a request whose body never comes, a request line too long for Node's
// parser, a path segment too long for Fastify's router. Each is answered inside the interface's
// envelope (never Node's or Fastify's bare 408, 414 or 431) and a stalled connection is closed.

const log = { info: () => undefined, error: () => undefined };
let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function start(timeoutMs: number): Promise<number> {
  // Deadlines of one second (production: 30 s and 10 s) so that the test waits for them.
  app = Fastify(serverOptions({ TRUST_PROXY: false, REQUEST_TIMEOUT_MS: timeoutMs, REQUEST_HEADERS_TIMEOUT_MS: timeoutMs }, log));
  installErrorHandling(app, log);
  app.post("/v1/echo", async (req) => req.body);
  app.get("/v1/items/:id", async (req) => req.params);
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Sends `raw` on a new connection; answers everything received until the server closes it. */
function exchange(port: number, raw: string, waitMs = 10_000): Promise<{ text: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const socket = connect(port, "127.0.0.1", () => socket.write(raw));
    let text = "";
    socket.on("data", (d) => (text += d.toString()));
    socket.on("close", () => resolve({ text, closedAfterMs: Date.now() - t0 }));
    socket.on("error", reject);
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`connection still open after ${waitMs} ms; received ${JSON.stringify(text)}`));
    }, waitMs);
  });
}

function envelopeOf(text: string): { status: number; error: { code: string; message: string; requestId: string; fields?: unknown[] } } {
  const [head = "", body = ""] = text.split("\r\n\r\n");
  return { status: Number(head.split(" ")[1]), ...(JSON.parse(body) as { error: { code: string; message: string; requestId: string } }) };
}

describe("client errors", () => {
  it("a body that never comes is answered 400 VALIDATION_FAILED in the envelope and the connection closed", async () => {
    const port = await start(1000);
    const res = await exchange(port, "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
    const e = envelopeOf(res.text);
    expect(e.status).toBe(400);
    expect(e.error.code).toBe("VALIDATION_FAILED");
    expect(e.error.message).toBe("the request did not arrive in time");
    expect(e.error.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(e.error.fields).toEqual([{ path: "", message: "the request did not arrive in time" }]);
    // Node tests the deadline every second: closed within the deadline plus one check.
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(res.closedAfterMs).toBeLessThan(5000);
  });

  it("a request line over Node's header limit is answered 400 in the envelope, not a bare 431", async () => {
    const port = await start(5000);
    const res = await exchange(port, `GET /v1/items/${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const e = envelopeOf(res.text);
    expect(e.status).toBe(400);
    expect(e.error.code).toBe("VALIDATION_FAILED");
  });

  it("a path segment over the router's limit is answered 404 in the envelope, not Fastify's 414", async () => {
    const port = await start(5000);
    const res = await fetch(`http://127.0.0.1:${port}/v1/items/${"a".repeat(3000)}`);
    expect(res.status).toBe(404);
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const body = (await res.json()) as { error: { code: string; requestId: string } };
    expect(body.error.code).toBe("NOT_FOUND");
    expect(body.error.requestId).toBe(res.headers.get("x-request-id"));
  });
});
