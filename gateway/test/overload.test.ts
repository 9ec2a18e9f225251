import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { installErrorHandling } from "../src/http.js";
import { installOverloadShedding, type OverloadOptions } from "../src/overload.js";

// Overload shedding: past the limit a request is answered at once with 429 RATE_LIMITED in the
// interface's envelope and Retry-After; under it nothing is shed; health is never shed.

const log = { info: () => undefined, error: () => undefined } as unknown as Parameters<typeof installErrorHandling>[1];

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A gateway-like app: /slow requests stay in flight until `release()`, /v1/wait/:ms (and
 * /v1/other/:ms, /v1/batch/wait/:ms) answers 200 after that long, /v1/quick at once.
 */
async function build(o: OverloadOptions) {
  app = Fastify({ genReqId: () => randomUUID() });
  installErrorHandling(app, log);
  const shedding = installOverloadShedding(app, o);
  const waiting: (() => void)[] = [];
  app.get("/slow", () => new Promise((resolve) => waiting.push(() => resolve({ ok: true }))));
  for (const url of ["/v1/wait/:ms", "/v1/other/:ms", "/v1/batch/wait/:ms"]) {
    app.get<{ Params: { ms: string } }>(url, async (req) => {
      await sleep(Number(req.params.ms));
      return { ok: true };
    });
  }
  app.get("/v1/quick", async () => ({ ok: true }));
  app.get("/v1/health", async () => ({ status: "ok" }));
  await app.ready();
  const release = () => waiting.splice(0).forEach((r) => r());
  const inFlight = async (n: number) => {
    while (waiting.length < n) await new Promise((r) => setTimeout(r, 5));
  };
  return { app, shedding, release, inFlight };
}

type Envelope = { error: { code: string; message: string; requestId: string; fields?: unknown } };

describe("overload shedding", () => {
  it("answers 429 RATE_LIMITED with Retry-After past the in-flight limit, and serves under it", async () => {
    const { app, shedding, release, inFlight } = await build({ maxLatencyMs: 0, maxInFlight: 3, maxEventLoopDelayMs: 0, retryAfterSeconds: 2 });
    // Under the limit: three in flight, none shed.
    const admitted = [0, 1, 2].map(() => app.inject({ method: "GET", url: "/slow" }));
    await inFlight(3);
    expect(shedding.inFlight()).toBe(3);
    // At the limit: the next one is shed at once, in the envelope; health still answers.
    const shed = await app.inject({ method: "GET", url: "/slow" });
    expect(shed.statusCode).toBe(429);
    expect(shed.headers["retry-after"]).toBe("2");
    const body = shed.json<Envelope>();
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "requestId"]);
    expect(body.error.code).toBe("RATE_LIMITED");
    expect(body.error.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await app.inject({ method: "GET", url: "/v1/health" })).statusCode).toBe(200);
    release();
    expect((await Promise.all(admitted)).map((r) => r.statusCode)).toEqual([200, 200, 200]);
    // Answered requests leave the count: the next ones are served again.
    expect(shedding.inFlight()).toBe(0);
    const again = [0, 1, 2].map(() => app.inject({ method: "GET", url: "/slow" }));
    await inFlight(3);
    release();
    expect((await Promise.all(again)).map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(shedding.shed()).toBe(1);
  });

  it("sheds while the event loop is delayed past its limit, and not once it is not", async () => {
    const { app } = await build({ maxLatencyMs: 0, maxInFlight: 0, maxEventLoopDelayMs: 40, retryAfterSeconds: 1, windowMs: 200 });
    expect((await app.inject({ method: "GET", url: "/v1/health" })).statusCode).toBe(200);
    // A quiet loop: nothing shed (an unknown route answers its 404).
    await new Promise((r) => setTimeout(r, 250));
    expect((await app.inject({ method: "GET", url: "/nope" })).statusCode).toBe(404);
    // Block the loop for 600 ms: the window's mean delay is far past 40 ms.
    const t = Date.now();
    while (Date.now() - t < 600);
    await sleep(50);
    const busy = await app.inject({ method: "GET", url: "/nope" });
    expect(busy.statusCode).toBe(429);
    expect(busy.headers["retry-after"]).toBe("1");
    expect(busy.json<Envelope>().error.code).toBe("RATE_LIMITED");
    expect((await app.inject({ method: "GET", url: "/v1/health" })).statusCode).toBe(200);
    // Two quiet windows later it serves again.
    await sleep(500);
    expect((await app.inject({ method: "GET", url: "/nope" })).statusCode).toBe(404);
  });

  it("sheds a route with a queue (quickest answer of a window over the limit, or as many waiting), not other routes", async () => {
    const { app, shedding } = await build({ maxLatencyMs: 100, maxInFlight: 0, maxEventLoopDelayMs: 0, retryAfterSeconds: 3, windowMs: 100 });
    const get = (url: string) => app.inject({ method: "GET", url });
    const many = (n: number, url: string) => Array.from({ length: n }, () => get(url));
    // Quick answers: nothing shed.
    expect((await Promise.all(many(6, "/v1/wait/10"))).map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200, 200]);
    // Waves of 7 slow ones, each sent as the previous one answered (a closed-loop client): no
    // queue of 8, nothing shed.
    for (let wave = 0; wave < 3; wave++) {
      const answers = await Promise.all(many(7, "/v1/wait/300"));
      expect(answers.map((r) => r.statusCode)).toEqual(answers.map(() => 200));
    }
    // Three answers of 300 ms in one window while 8 more are in flight: the route has a queue.
    const slow = [...many(3, "/v1/wait/300"), ...many(8, "/v1/wait/1500")];
    const batch = [...many(3, "/v1/batch/wait/300"), ...many(8, "/v1/batch/wait/1500")];
    // A stall: 8 in flight for longer than the limit, none answered yet.
    const stalled = many(8, "/v1/other/1500");
    await sleep(600);
    const shedNow = await get("/v1/wait/10");
    expect(shedNow.statusCode).toBe(429);
    expect(shedNow.headers["retry-after"]).toBe("3");
    expect(shedNow.json<Envelope>().error.code).toBe("RATE_LIMITED");
    expect((await get("/v1/other/10")).statusCode).toBe(429);
    // Another route answers; a batch import is never shed for its time.
    expect((await get("/v1/quick")).statusCode).toBe(200);
    expect((await get("/v1/batch/wait/0")).statusCode).toBe(200);
    expect((await Promise.all(slow)).map((r) => r.statusCode)).toEqual(slow.map(() => 200));
    expect((await Promise.all(batch)).map((r) => r.statusCode)).toEqual(batch.map(() => 200));
    expect((await Promise.all(stalled)).map((r) => r.statusCode)).toEqual(stalled.map(() => 200));
    // Nothing of it left in flight: served at once.
    expect((await get("/v1/wait/10")).statusCode).toBe(200);
    expect((await get("/v1/other/10")).statusCode).toBe(200);
    expect(shedding.shed()).toBe(2);
  });
});
