import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { unseal, type Sealed } from "@feeds/kit";
import { startPrivateRedis, type PrivateServer } from "../../scripts/infra.mjs";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { envelope, http, newIp, PASSWORD, uniqueEmail } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { until } from "../support/until.js";

// Secret rotation and suspension while Redis (the change signal every gateway replica reads) is
// down: the caller gets the change, or nothing changed. A system of its own on a private Redis
// that the test stops and starts; MongoDB and NATS are the shared ones.



describe("rotation and suspension when Redis fails", () => {
  let redis: PrivateServer;
  let system: RunningSystem;
  let urls: { mongoUrl: string; natsUrl: string; redisUrl: string };
  const namespace = newNamespace("rotation");
  const masterKey = randomBytes(32);
  const staff = { email: "staff@rotation.test", password: randomBytes(12).toString("base64url") };

  beforeAll(async () => {
    const infra = await testInfra();
    redis = await startPrivateRedis();
    urls = { mongoUrl: infra.mongoUrl, natsUrl: infra.natsUrl, redisUrl: redis.url };
    system = await startSystem({
      env: {
        ...infra.env,
        REDIS_URL: redis.url,
        FEEDS_NAMESPACE: namespace,
        FEEDS_MASTER_KEY: masterKey.toString("base64"),
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "fatal",
      },
    });
  });

  afterAll(async () => {
    await system?.stop();
    if (redis && !redis.running) await redis.start();
    if (urls) await dropNamespace(namespace, urls);
    await redis?.stop();
  });

  const call = (method: string, path: string, opts: { token?: string; body?: unknown } = {}) =>
    http(method, path, { ...opts, url: system.url, ip: newIp() });
  const ready = async () => (await call("GET", "/v1/health/ready")).status;

  /** A tenant, its secret, a staff session and an owner's session. */
  async function tenantWithOwner() {
    const session = (await call("POST", "/operator/login", { body: staff })).body.token as string;
    const created = await call("POST", "/admin/tenants", { token: session, body: { name: "rotating" } });
    expect(created.status).toBe(201);
    const id = created.body.tenant.id as string;
    const invite = await call("POST", `/admin/tenants/${id}/operators`, {
      token: session,
      body: { email: uniqueEmail("owner"), name: "owner", role: "owner" },
    });
    expect(invite.status).toBe(201);
    const accepted = await call("POST", "/operator/invite/accept", { body: { token: invite.body.invite_token, password: PASSWORD } });
    expect(accepted.status).toBe(200);
    return {
      id,
      apiKey: created.body.tenant.api_key as string,
      secret: created.body.api_secret as string,
      session,
      owner: accepted.body.token as string,
    };
  }

  /** The secret stored for the tenant, read from MongoDB and unsealed. */
  async function storedSecret(id: string): Promise<string> {
    const mongo = new MongoClient(urls.mongoUrl, { serverSelectionTimeoutMS: 3_000 });
    try {
      const doc = await mongo.db(namespace).collection<{ _id: string; secret: Sealed }>("tenants").findOne({ _id: id });
      if (!doc) throw new Error(`no tenant ${id}`);
      return unseal(masterKey, doc.secret, `tenant:${id}`);
    } finally {
      await mongo.close();
    }
  }

  const feedWith = async (apiKey: string, secret: string) =>
    (await call("GET", "/v1/feeds/user/someone", { token: await createServerToken(apiKey, secret) })).status;

  /** Stops Redis, runs `fn`, starts Redis again and waits until the system serves again. */
  async function whileRedisIsDown(fn: () => Promise<void>) {
    await redis.stop();
    try {
      await until("readiness to notice Redis is down", async () => ((await ready()) === 503 ? true : undefined), 30_000);
      await fn();
    } finally {
      await redis.start();
      await until("readiness after Redis returns", async () => ((await ready()) === 200 ? true : undefined), 60_000);
    }
  }

  async function expectInternal(path: string, token: string) {
    const res = await call("POST", path, { token });
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(500);
    expect(envelope(res).code).toBe("INTERNAL");
  }

  it("Redis down: the admin's and the owner's rotation answer 500, and once it is back the old secret is the one", async () => {
    const t = await tenantWithOwner();
    expect(await feedWith(t.apiKey, t.secret)).toBe(200);
    await whileRedisIsDown(async () => {
      await expectInternal(`/admin/tenants/${t.id}/rotate-secret`, t.session);
      await expectInternal("/operator/tenant/rotate-secret", t.owner);
    });
    expect(await storedSecret(t.id)).toBe(t.secret);
    // A change signal makes every replica read the credential again: it is still the old one.
    expect((await call("POST", `/admin/tenants/${t.id}/reactivate`, { token: t.session })).status).toBe(200);
    expect(await feedWith(t.apiKey, t.secret)).toBe(200);
  });

  it("Redis down: a suspension answers 500, and once it is back the tenant is active", async () => {
    const t = await tenantWithOwner();
    await whileRedisIsDown(() => expectInternal(`/admin/tenants/${t.id}/suspend`, t.session));
    expect((await call("GET", `/admin/tenants/${t.id}`, { token: t.session })).body.status).toBe("active");
    expect(await feedWith(t.apiKey, t.secret)).toBe(200);
  });

  it("Redis up: the owner's rotation hands back the new secret, and the old one stops at once", async () => {
    const t = await tenantWithOwner();
    expect(await feedWith(t.apiKey, t.secret)).toBe(200);
    const rotated = await call("POST", "/operator/tenant/rotate-secret", { token: t.owner });
    expect(rotated.status).toBe(200);
    const secret = rotated.body.api_secret as string;
    expect(await storedSecret(t.id)).toBe(secret);
    expect(await feedWith(t.apiKey, t.secret)).toBe(401);
    expect(await feedWith(t.apiKey, secret)).toBe(200);
  });
});
