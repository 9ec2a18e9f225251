import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { startPrivateFerretdb, startPrivateNats, startPrivateRedis, type PrivateServer } from "../../scripts/infra.mjs";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { envelope, http, newIp } from "../support/api.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { until } from "../support/until.js";

// Dependencies die and come back: readiness names the dead one within seconds, requests that
// need it fail with INTERNAL, and the system recovers by itself when it returns.



describe("dependency outages", () => {
  let mongo: PrivateServer;
  let nats: PrivateServer;
  let redis: PrivateServer;
  let system: RunningSystem;
  const namespace = newNamespace("recovery");
  const staff = { email: "staff@recovery.test", password: randomBytes(12).toString("base64url") };

  beforeAll(async () => {
    [mongo, nats, redis] = await Promise.all([startPrivateFerretdb(), startPrivateNats(), startPrivateRedis()]);
    system = await startSystem({
      env: {
        MONGO_URL: mongo.url,
        NATS_URL: nats.url,
        REDIS_URL: redis.url,
        FEEDS_NAMESPACE: namespace,
        FEEDS_MASTER_KEY: randomBytes(32).toString("base64"),
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "fatal",
      },
    });
  });

  afterAll(async () => {
    await system?.stop();
    for (const s of [mongo, nats, redis]) if (s && !s.running) await s.start();
    if (mongo && nats && redis) await dropNamespace(namespace, { mongoUrl: mongo.url, natsUrl: nats.url, redisUrl: redis.url });
    await Promise.all([mongo?.stop(), nats?.stop(), redis?.stop()]);
  });

  const ready = () => http("GET", "/v1/health/ready", { url: system.url });

  async function login() {
    const res = await http("POST", "/operator/login", { url: system.url, ip: newIp(), body: staff });
    return res;
  }

  it.each([
    ["redis", () => redis],
    ["nats", () => nats],
    ["mongodb", () => mongo],
  ] as const)("%s: 503 naming it while down, recovery by itself when back", async (name, server) => {
    expect((await ready()).status).toBe(200);
    // With NATS down, an activity write still answers 201 (its outbox mark is stored with it)
    // and its fan-out follows when NATS returns (the relay publishes what was left unpublished).
    const writer = name === "nats" ? await tenantWithFollower() : undefined;
    await server().stop();
    const started = Date.now();
    const down = await until(`readiness to name ${name}`, async () => {
      const r = await ready();
      return r.status === 503 ? r : undefined;
    }, 30_000, 200);
    // Each check has its own short timeout: the dead dependency is noticed within seconds.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(down.body.status).toBe("unavailable");
    expect(down.body.checks).toContainEqual({ name, ok: false });
    expect(down.body.checks.filter((c: { ok: boolean }) => !c.ok).map((c: { name: string }) => c.name)).toEqual([name]);
    let posted: string | undefined;
    if (writer) {
      const res = await http("POST", "/v1/feeds/user/author/activities", {
        url: system.url,
        token: writer.server,
        body: { actor: "user:author", verb: "post", object: "while-nats-was-down" },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      posted = res.body.id as string;
      // Read your own writes: the origin feed shows it at once.
      const origin = await http("GET", "/v1/feeds/user/author", { url: system.url, token: writer.server });
      expect(origin.body.results.map((a: { id: string }) => a.id)).toEqual([posted]);
      const timeline = await http("GET", "/v1/feeds/timeline/reader", { url: system.url, token: writer.server });
      expect(timeline.body.results).toEqual([]);
    }
    if (name !== "nats") {
      // A request that needs the dead dependency fails with INTERNAL in the envelope.
      const res = await login();
      expect(res.status).toBe(500);
      expect(envelope(res).code).toBe("INTERNAL");
    }

    await server().start();
    await until(`readiness after ${name} returns`, async () => ((await ready()).status === 200 ? true : undefined), 60_000);
    // The system serves again without a restart: log in and create a tenant.
    const session = await until("a login", async () => {
      const r = await login();
      return r.status === 200 ? (r.body.token as string) : undefined;
    }, 30_000);
    const created = await http("POST", "/admin/tenants", { url: system.url, token: session, body: { name: `after-${name}` } });
    expect(created.status).toBe(201);
    if (writer && posted) {
      const id = posted;
      await until("the activity written while NATS was down on the follower's feed", async () => {
        const r = await http("GET", "/v1/feeds/timeline/reader", { url: system.url, token: writer.server });
        return r.body.results?.some((a: { id: string }) => a.id === id) ? true : undefined;
      }, 30_000);
    }
  });

  /** A tenant whose timeline:reader follows user:author; answers its server token. */
  async function tenantWithFollower() {
    const session = (await login()).body.token as string;
    const created = await http("POST", "/admin/tenants", { url: system.url, token: session, body: { name: "writer" } });
    expect(created.status).toBe(201);
    const server = await createServerToken(created.body.tenant.api_key, created.body.api_secret);
    const follow = await http("POST", "/v1/feeds/timeline/reader/follows", { url: system.url, token: server, body: { target: "user:author" } });
    expect(follow.status).toBe(201);
    return { server };
  }
});
