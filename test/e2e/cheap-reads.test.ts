import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { http, namespaceKeys, newTenant } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";

// Requests anyone may send at any rate must cost the same however many are sent: readiness is
// answered from one shared, short-lived result (READY_CACHE_MS, 500 ms; queue depth too, which
// gateway/test/health-routes.test.ts counts), and the change signal of a feed with nothing in it
// stores nothing.

let redis: Redis;
beforeAll(async () => {
  redis = new Redis(inject("redisUrl"), { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
});
afterAll(() => redis.disconnect());

/** Every key of this run's namespace that names the tenant and one of `feeds` (`group/id`). */
async function feedKeys(tenantId: string, feeds: string[]): Promise<string[]> {
  const ids = feeds.map((f) => f.split("/")[1] as string);
  return (await namespaceKeys(redis, `*${tenantId}*`)).filter((k) => ids.some((id) => k.includes(id)));
}

describe("health routes", () => {
  it("100 concurrent readiness calls run the checks once or twice, not 100 times", async () => {
    const before = await scrape();
    const answers = await Promise.all(Array.from({ length: 100 }, () => http("GET", "/v1/health/ready")));
    const after = await scrape();
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    // The calls span at most a second or two: one check per 500 ms at most.
    const pings = delta("feeds_mongodb_commands_total", { command: "ping" });
    expect(pings).toBeGreaterThanOrEqual(1);
    expect(pings).toBeLessThanOrEqual(4);
    // Seven services' gRPC health checks per round.
    expect(delta("feeds_rpc_duration_seconds_count", { method: "Check" }) % 7).toBe(0);
    expect(delta("feeds_rpc_duration_seconds_count", { method: "Check" })).toBeLessThanOrEqual(4 * 7);
  });
});

describe("feed change signals", () => {
  it("a feed with nothing in it has one stable version and stores nothing, until something is posted", async () => {
    const t = await newTenant();
    const server = await t.server();
    const feeds = Array.from({ length: 50 }, () => `user/${randomBytes(6).toString("hex")}`);
    const first = await Promise.all(feeds.map((f) => http("GET", `/v1/feeds/${f}/signal`, { token: server })));
    const second = await Promise.all(feeds.map((f) => http("GET", `/v1/feeds/${f}/signal`, { token: server })));
    expect(new Set([...first, ...second].map((a) => a.headers.get("etag")))).toEqual(new Set(['"0"']));
    expect(first[0]?.body).toMatchObject({ version: 0, head: null });
    // Reads of empty feeds leave nothing either.
    await Promise.all(feeds.map((f) => http("GET", `/v1/feeds/${f}`, { token: server })));
    expect(await feedKeys(t.id, feeds)).toEqual([]);
    // A post moves the origin feed's signal at once, and it then stays put between polls.
    const [group, id] = (feeds[0] as string).split("/");
    expect((await http("POST", `/v1/feeds/${group}/${id}/activities`, { token: server, body: { actor: "user:a", verb: "post", object: "note:1" } })).status).toBe(201);
    const moved = await http("GET", `/v1/feeds/${group}/${id}/signal`, { token: server });
    expect(moved.headers.get("etag")).not.toBe('"0"');
    expect(moved.body.head).toEqual(expect.any(String));
    const polled = await http("GET", `/v1/feeds/${group}/${id}/signal`, { token: server, headers: { "if-none-match": moved.headers.get("etag") as string } });
    expect(polled.status).toBe(304);
  });
});
