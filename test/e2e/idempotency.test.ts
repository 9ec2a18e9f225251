import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import { envelope, http, namespaceKeys, newTenant, systemRedis, type RawAnswer, type TestTenant } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";
import { until } from "../support/until.js";
import type { RedisConn } from "@feeds/kit";

// Idempotency-Key through the real gateway (contract section 6): one write per key, the kept
// answer replayed with Idempotent-Replayed, 409 for another request under the key, 429 with
// Retry-After 1 while the first runs, scoped per tenant, principal, method and path.

const post = (token: string, feed: string, body: unknown, key?: string) =>
  http("POST", `/v1/feeds/${feed}/activities`, { token, body, ...(key === undefined ? {} : { headers: { "idempotency-key": key } }) });
const read = async (token: string, feed: string): Promise<any[]> => {
  const res = await http("GET", `/v1/feeds/${feed}?limit=100`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.results as any[];
};
const replayed = (a: RawAnswer) => a.headers.get("idempotent-replayed");
const note = (n: string) => ({ actor: "user:idem", verb: "post", object: `note:${n}` });

let t: TestTenant;
let server: string;
let redis: RedisConn;
beforeAll(async () => {
  t = await newTenant();
  server = await t.server();
  redis = await systemRedis();
});
afterAll(() => redis.close());

describe("Idempotency-Key on a write", () => {
  it("same key and body twice: one activity, one fan-out, the second answer replayed byte for byte", async () => {
    expect((await http("POST", "/v1/feeds/timeline/fan/follows", { token: server, body: { target: "user:idem" } })).status).toBe(201);
    const key = randomUUID();
    const before = total(await scrape(), "feeds_idempotent_requests_total", { outcome: "replayed" });
    const first = await post(server, "user/idem", note("1"), key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(replayed(first)).toBeNull();
    const second = await post(server, "user/idem", note("1"), key);
    expect(second.status).toBe(201);
    expect(replayed(second)).toBe("true");
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("content-type")).toBe(first.headers.get("content-type"));
    // The replay is a request of its own: its own id, and it counts in the rate window.
    expect(second.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    expect(second.headers.get("ratelimit-remaining")).not.toBeNull();
    expect(total(await scrape(), "feeds_idempotent_requests_total", { outcome: "replayed" })).toBe(before + 1);

    expect((await read(server, "user/idem")).map((a) => a.id)).toEqual([first.body.id]);
    await until("the activity on timeline:fan", async () => ((await read(server, "timeline/fan")).length > 0 ? true : undefined), 10_000);
    // A second fan-out would have arrived by now (the outbox relay republishes after 2 s).
    await new Promise((r) => setTimeout(r, 2500));
    expect((await read(server, "timeline/fan")).map((a) => a.id)).toEqual([first.body.id]);

    // The kept answer lives under the tenant's hash tag, named by a hash, for 24 hours.
    const keys = (await Promise.all(redis.masters().map((m) => namespaceKeys(m, `{t:${t.id}}:idem:*`)))).flat();
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) {
      expect(k).toMatch(/:\{t:[^}]+\}:idem:[0-9a-f]{64}$/);
      const ttl = await redis.redis.ttl(k);
      expect(ttl).toBeGreaterThan(24 * 3600 - 120);
      expect(ttl).toBeLessThanOrEqual(24 * 3600);
    }
  });

  it("same key, other body: 409 CONFLICT and nothing written", async () => {
    const key = randomUUID();
    expect((await post(server, "user/other-body", note("a"), key)).status).toBe(201);
    const other = await post(server, "user/other-body", note("b"), key);
    expect(other.status).toBe(409);
    expect(envelope(other).code).toBe("CONFLICT");
    expect(envelope(other).message).toMatch(/used for another request/);
    expect(replayed(other)).toBeNull();
    expect((await read(server, "user/other-body")).map((a) => a.object)).toEqual(["note:a"]);
    // Key order in the JSON is not a different body.
    const reordered = await post(server, "user/other-body", { object: "note:a", verb: "post", actor: "user:idem" }, key);
    expect(reordered.status).toBe(201);
    expect(replayed(reordered)).toBe("true");
  });

  it("ten parallel requests with one key: exactly one write; the others wait (429, Retry-After 1) or replay", async () => {
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(server, "user/parallel", note("p"), key)));
    const ran = answers.filter((a) => a.status === 201 && replayed(a) === null);
    expect(ran).toHaveLength(1);
    const id = ran[0]?.body.id as string;
    for (const a of answers) {
      if (a.status === 429) {
        expect(envelope(a).code).toBe("RATE_LIMITED");
        expect(a.headers.get("retry-after")).toBe("1");
      } else {
        expect(a.status).toBe(201);
        expect(a.body.id).toBe(id);
      }
    }
    expect((await read(server, "user/parallel")).map((a) => a.id)).toEqual([id]);
    // A client that waited gets the replay.
    const again = await post(server, "user/parallel", note("p"), key);
    expect([again.status, replayed(again), again.body.id]).toEqual([201, "true", id]);
  });

  it("the same key from another user, another tenant or the tenant's server runs on its own", async () => {
    const activity = (await post(server, "user/shared", note("s"))).body;
    const key = "shared-key";
    const comment = (token: string, body: unknown) =>
      http("POST", `/v1/activities/${activity.id}/comments`, { token, body, headers: { "idempotency-key": key } });
    const [u1, u2] = [await t.user("u1"), await t.user("u2")];
    const a1 = await comment(u1, { text: "same words" });
    const a2 = await comment(u2, { text: "same words" });
    const s = await comment(server, { text: "same words", user_id: "u3" });
    for (const a of [a1, a2, s]) {
      expect(a.status, JSON.stringify(a.body)).toBe(201);
      expect(replayed(a)).toBeNull();
    }
    expect(new Set([a1.body.id, a2.body.id, s.body.id]).size).toBe(3);
    // Each principal's own repeat is a replay.
    const again = await comment(u1, { text: "same words" });
    expect([replayed(again), again.body.id]).toEqual(["true", a1.body.id]);
    const comments = await http("GET", `/v1/activities/${activity.id}/comments`, { token: server });
    expect(comments.body.results).toHaveLength(3);

    const other = await newTenant();
    const otherServer = await other.server();
    const k2 = randomUUID();
    const mine = await post(server, "user/cross", note("x"), k2);
    const theirs = await post(otherServer, "user/cross", note("x"), k2);
    expect([mine.status, theirs.status, replayed(theirs)]).toEqual([201, 201, null]);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(await read(otherServer, "user/cross")).toHaveLength(1);
  });

  it("the same key on another path or method runs on its own", async () => {
    const key = randomUUID();
    const a = await post(server, "user/path-a", note("1"), key);
    const b = await post(server, "user/path-b", note("1"), key);
    expect([a.status, b.status, replayed(b)]).toEqual([201, 201, null]);
  });

  it("a 4xx is kept and replayed (the first request's envelope, request id included)", async () => {
    const key = randomUUID();
    const url = `/v1/activities/${randomUUID()}`;
    const first = await http("DELETE", url, { token: server, headers: { "idempotency-key": key } });
    expect(first.status).toBe(404);
    const second = await http("DELETE", url, { token: server, headers: { "idempotency-key": key } });
    expect([second.status, replayed(second)]).toEqual([404, "true"]);
    expect(second.body).toEqual(first.body);
    expect(second.body.error.requestId).toBe(first.headers.get("x-request-id"));
  });

  it("a 401 is not kept: the same key with a good token runs", async () => {
    const key = randomUUID();
    const forged = await new SignJWT({ server: true }).setProtectedHeader({ alg: "HS256", kid: t.apiKey }).setIssuedAt().sign(new TextEncoder().encode("not the secret"));
    const refused = await post(forged, "user/after-401", note("1"), key);
    expect(refused.status).toBe(401);
    const ran = await post(server, "user/after-401", note("1"), key);
    expect([ran.status, replayed(ran)]).toEqual([201, null]);
    expect(await read(server, "user/after-401")).toHaveLength(1);
  });

  it("a key of 256 characters, an empty one or one outside printable ASCII answers 400 naming the header; 255 is taken", async () => {
    for (const key of ["k".repeat(256), "", "caf\u00e9"]) {
      const res = await post(server, "user/keys", note("1"), key);
      expect(res.status, JSON.stringify(key)).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
      expect(envelope(res).fields?.map((f) => f.path)).toEqual(["Idempotency-Key"]);
    }
    expect(await read(server, "user/keys")).toHaveLength(0);
    expect((await post(server, "user/keys", note("1"), "k".repeat(255))).status).toBe(201);
  });

  it("a GET ignores the header, whatever it holds", async () => {
    for (const key of ["k".repeat(300), "same", "same"]) {
      const res = await http("GET", "/v1/feeds/user/idem", { token: server, headers: { "idempotency-key": key } });
      expect(res.status).toBe(200);
      expect(replayed(res)).toBeNull();
    }
  });

  it("PUT and DELETE with keys: replayed as first answered, another body refused", async () => {
    const key = randomUUID();
    const put = (body: unknown) => http("PUT", "/v1/users/idem-put", { token: server, body, headers: { "idempotency-key": key } });
    const first = await put({ custom: { n: 1 } });
    expect(first.status).toBe(201);
    await new Promise((r) => setTimeout(r, 5));
    const second = await put({ custom: { n: 1 } });
    // A run would answer 200 with a later updated_at; the replay answers the first 201.
    expect([second.status, replayed(second)]).toEqual([201, "true"]);
    expect(second.body).toEqual(first.body);
    expect((await put({ custom: { n: 2 } })).status).toBe(409);
    expect((await http("GET", "/v1/users/idem-put", { token: server })).body.custom).toEqual({ n: 1 });

    const activity = (await post(server, "user/del", note("d"))).body;
    const del = () => http("DELETE", `/v1/activities/${activity.id}`, { token: server, headers: { "idempotency-key": key } });
    const gone = await del();
    expect([gone.status, replayed(gone)]).toEqual([204, null]);
    const again = await del();
    expect([again.status, replayed(again)]).toEqual([204, "true"]);
    expect(await read(server, "user/del")).toHaveLength(0);
  });
});
