import { randomBytes, randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, type RedisConn } from "@feeds/kit";
import { dropNamespace } from "@feeds/kit/testing";
import type { Operator } from "@feeds/proto/feeds/identity/v1/identity";
import type { Tenant } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { installErrorHandling, installRequestIds } from "../src/http.js";
import { createIdempotency, MAX_KEPT_BYTES, type Authorized } from "../src/idempotency.js";

// The Redis half of Idempotency-Key against the real Redis (FEEDS_TEST_REDIS_URL, default the
// local one) in a namespace of its own: what a 5xx leaves, the size cap, the marker's lifetime and
// its refresh, a gateway without Redis, and where the records live.

const url = process.env.FEEDS_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const namespace = `gw_idem_${randomBytes(4).toString("hex")}`;
// A marker of REQUEST_TIMEOUT_MS + 5 s: 5 s here, refreshed every 1.67 s.
const config = { REQUEST_TIMEOUT_MS: 0 };
const silent = { error: () => undefined };

/** What the next run of the route answers, and how often it ran. */
const route = { runs: 0, status: 201, body: { ok: true } as unknown, delayMs: 0 };

const asUser = (tenantId: string, userId: string): Authorized => ({ tenant: { kind: "user", tenant: { id: tenantId } as Tenant, userId }, operator: null });
const asStaff = (id: string): Authorized => ({ tenant: null, operator: { operator: { id, tenantId: "" } as Operator } });

async function appOn(conn: RedisConn): Promise<FastifyInstance> {
  const app = Fastify();
  installRequestIds(app);
  installErrorHandling(app, { error: () => undefined, info: () => undefined });
  const idem = createIdempotency(app, conn, config, silent);
  app.post("/w/:id", async (req, reply) => {
    const h = req.headers["x-test-staff"];
    const auth = typeof h === "string" ? asStaff(h) : asUser(String(req.headers["x-test-tenant"] ?? "t1"), String(req.headers["x-test-user"] ?? "u1"));
    if (await idem.claim(req, reply, auth)) return reply;
    route.runs++;
    if (route.delayMs) await new Promise((r) => setTimeout(r, route.delayMs));
    reply.code(route.status);
    return route.body;
  });
  await app.ready();
  return app;
}

let conn: RedisConn;
let app: FastifyInstance;
beforeAll(async () => {
  conn = await connectRedis({ REDIS_URL: url, FEEDS_NAMESPACE: namespace });
  app = await appOn(conn);
});
afterAll(async () => {
  await app.close();
  await dropNamespace(namespace, { redis: conn.redis });
  await conn.close();
});

const send = (key: string, headers: Record<string, string> = {}, path = "/w/1") =>
  app.inject({ method: "POST", url: path, headers: { "idempotency-key": key, "content-type": "application/json", ...headers }, payload: JSON.stringify({ a: 1 }) });
const records = async (tag: string) => conn.redis.keys(`${namespace}:{${tag}}:idem:*`);

function reset(over: Partial<typeof route> = {}) {
  Object.assign(route, { runs: 0, status: 201, body: { ok: true }, delayMs: 0 }, over);
}

describe("Idempotency-Key records in Redis", () => {
  it("a 5xx keeps nothing: the retry runs, and its answer is the one kept", async () => {
    reset({ status: 500 });
    const key = randomUUID();
    expect((await send(key)).statusCode).toBe(500);
    route.status = 201;
    const ran = await send(key);
    expect([ran.statusCode, ran.headers["idempotent-replayed"]]).toEqual([201, undefined]);
    const replay = await send(key);
    expect([replay.statusCode, replay.headers["idempotent-replayed"]]).toEqual([201, "true"]);
    expect(route.runs).toBe(2);
  });

  it("a 401 or 429 the route answers keeps nothing either; a 403 is kept", async () => {
    for (const status of [401, 429]) {
      reset({ status, body: { error: { code: "X", message: "m", requestId: "r" } } });
      const key = randomUUID();
      await send(key);
      await send(key);
      expect(route.runs, String(status)).toBe(2);
    }
    reset({ status: 403, body: { error: { code: "FORBIDDEN", message: "not allowed", requestId: "r" } } });
    const key = randomUUID();
    await send(key);
    expect((await send(key)).headers["idempotent-replayed"]).toBe("true");
    expect(route.runs).toBe(1);
  });

  it("an answer over 1 MiB is not kept, and a repeat answers 409 without running again", async () => {
    reset({ body: { big: "x".repeat(MAX_KEPT_BYTES) } });
    const key = randomUUID();
    expect((await send(key)).statusCode).toBe(201);
    const again = await send(key);
    expect(again.statusCode).toBe(409);
    expect(again.json<{ error: { code: string; message: string } }>().error).toMatchObject({ code: "CONFLICT", message: expect.stringMatching(/too large to keep/) as unknown });
    expect(route.runs).toBe(1);
  });

  it("the running marker lives 5 s past the request timeout, is refreshed while the request runs, and a repeat meanwhile gets 429 Retry-After 1", async () => {
    reset({ delayMs: 6500 });
    const key = randomUUID();
    const t = { "x-test-tenant": "t-marker" };
    const first = send(key, t);
    await new Promise((r) => setTimeout(r, 200));
    const [marker] = await records("t:t-marker");
    const ttl = await conn.redis.pttl(marker ?? "");
    expect(ttl).toBeGreaterThan(4000);
    expect(ttl).toBeLessThanOrEqual(5000);
    // Past the marker's first lifetime: still held, by its refreshes.
    await new Promise((r) => setTimeout(r, 5500));
    const waiting = await send(key, t);
    expect([waiting.statusCode, waiting.headers["retry-after"]]).toEqual([429, "1"]);
    expect(waiting.json<{ error: { code: string } }>().error.code).toBe("RATE_LIMITED");
    expect((await first).statusCode).toBe(201);
    expect((await send(key, t)).headers["idempotent-replayed"]).toBe("true");
    expect(route.runs).toBe(1);
  }, 20_000);

  it("a crashed gateway's marker lapses within its lifetime, and then a retry runs", async () => {
    reset();
    const key = randomUUID();
    const t = { "x-test-tenant": "t-crash" };
    expect((await send(key, t)).statusCode).toBe(201);
    const [kept] = await records("t:t-crash");
    // As a marker left by a process that died: no owner left to refresh, finish or release it.
    const fingerprint = (await conn.redis.hget(kept ?? "", "f")) ?? "";
    await conn.redis.del(kept ?? "");
    await conn.redis.hset(kept ?? "", "s", "run", "t", "dead-owner", "f", fingerprint);
    await conn.redis.pexpire(kept ?? "", 300);
    expect((await send(key, t)).statusCode).toBe(429);
    await new Promise((r) => setTimeout(r, 400));
    expect((await send(key, t)).statusCode).toBe(201);
    expect(route.runs).toBe(2);
  });

  it("keeps the record under the tenant's hash tag (staff: a tag of their own), 24 hours, named by a hash", async () => {
    reset();
    await send("tagged", { "x-test-tenant": "t-tagged" });
    await send("tagged", { "x-test-staff": "op1" });
    const tenant = await records("t:t-tagged");
    const staff = await records("staff");
    expect([tenant.length, staff.length]).toEqual([1, 1]);
    for (const k of [...tenant, ...staff]) {
      expect(k).toMatch(/:idem:[0-9a-f]{64}$/);
      expect(await conn.redis.ttl(k)).toBeGreaterThan(24 * 3600 - 10);
      expect(await conn.redis.hget(k, "s")).toBe("done");
    }
  });

  it("without Redis a write with a key answers 500 and does not run", async () => {
    const broken = await connectRedis({ REDIS_URL: url, FEEDS_NAMESPACE: namespace });
    const down = await appOn(broken);
    broken.redis.disconnect();
    try {
      reset();
      const res = await down.inject({ method: "POST", url: "/w/1", headers: { "idempotency-key": "k", "content-type": "application/json" }, payload: "{}" });
      expect(res.statusCode).toBe(500);
      expect(res.json<{ error: { code: string } }>().error.code).toBe("INTERNAL");
      expect(route.runs).toBe(0);
    } finally {
      await down.close();
    }
  });
});
