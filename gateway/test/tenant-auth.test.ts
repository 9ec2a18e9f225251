import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { connectRedis, fromRpcError, notFound, tenantVersionKey, toConnectError, type RedisConn } from "@feeds/kit";
import { GetCredentialResponseSchema, TenantSchema, TenantStatus } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { GetRevocationResponseSchema } from "@feeds/proto/feeds/identity/v1/identity";
import { dropNamespace } from "@feeds/kit/testing";
import { createTenantAuthenticator } from "../src/auth.js";
import { createAuthFailureBudget } from "../src/auth-failures.js";
import { createRateLimiter } from "../src/rate-limit.js";

// The tenant authenticator against the real Redis (FEEDS_TEST_REDIS_URL, default the local one)
// in a namespace of its own, with tenancy and identity replaced by counting stand-ins.

const url = process.env.FEEDS_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const namespace = `gw_auth_${randomBytes(4).toString("hex")}`;
const apiKeyShaped = () => `ak_${randomBytes(12).toString("hex")}`;
const now = () => Math.floor(Date.now() / 1000);

let conn: RedisConn;
beforeAll(async () => {
  conn = await connectRedis({ REDIS_URL: url, FEEDS_NAMESPACE: namespace });
});
afterEach(() => {
  vi.useRealTimers();
});
afterAll(async () => {
  await dropNamespace(namespace, { redis: conn.redis });
  await conn.close();
});

/** One tenant known to a stand-in tenancy that counts every lookup. */
function system(opts: { onLookup?: (apiKey: string, call: number) => Promise<string | undefined> } = {}) {
  const tenant = { id: `t_${randomBytes(4).toString("hex")}`, apiKey: apiKeyShaped(), secret: randomBytes(32).toString("base64url") };
  const lookups: string[] = [];
  const tenancy = {
    async getCredential(req: { apiKey?: string }) {
      const apiKey = req.apiKey ?? "";
      lookups.push(apiKey);
      const secret = (await opts.onLookup?.(apiKey, lookups.length)) ?? tenant.secret;
      if (apiKey !== tenant.apiKey) throw toConnectError(notFound("no such api key"));
      return create(GetCredentialResponseSchema, {
        tenant: create(TenantSchema, { id: tenant.id, apiKey: tenant.apiKey, status: TenantStatus.ACTIVE }),
        apiSecret: secret,
      });
    },
  };
  const users = { getRevocation: async () => create(GetRevocationResponseSchema, {}) };
  const limiter = createRateLimiter(conn);
  const auth = createTenantAuthenticator({
    clients: { tenancy, users },
    redis: conn,
    limiter,
    failures: createAuthFailureBudget(limiter, 60),
    config: { DEFAULT_RATE_LIMIT_PER_MINUTE: 1_000_000, BATCH_RATE_LIMIT_PER_MINUTE: 1_000_000, USER_RATE_LIMIT_PERCENT: 10, SERVER_RESERVED_RATE_PERCENT: 20 },
  });
  // An address of its own: the lookups these tests count are not held back by another's failures.
  const address = `10.9.${randomBytes(1)[0] ?? 0}.${randomBytes(1)[0] ?? 0}`;
  const token = (kid: string, secret = tenant.secret) =>
    new SignJWT({ server: true, iat: now() }).setProtectedHeader({ alg: "HS256", kid }).sign(new TextEncoder().encode(secret));
  const outcome = async (t: string) => {
    try {
      return (await auth.authenticate(`Bearer ${t}`, { windowName: "normal", weight: 1, requestId: randomUUID(), address })).kind;
    } catch (e) {
      return fromRpcError(e).code;
    }
  };
  return { tenant, lookups, token, outcome };
}

const keysOf = async (part: string) => (await conn.redis.keys(`${namespace}:*`)).filter((k) => k.includes(part));

describe("tenant authenticator: unknown kids", () => {
  it("looks an unknown well-shaped kid up once for 300 requests, a concurrent burst then one by one", async () => {
    const s = system();
    const kid = apiKeyShaped();
    const t = await s.token(kid);
    const concurrent = await Promise.all(Array.from({ length: 200 }, () => s.outcome(t)));
    const sequential = [];
    for (let i = 0; i < 100; i++) sequential.push(await s.outcome(t));
    expect(new Set([...concurrent, ...sequential])).toEqual(new Set(["UNAUTHENTICATED"]));
    expect(s.lookups).toEqual([kid]);
    expect(await keysOf(kid)).toEqual([]);
  });

  it("looks up no kid that is not shaped like an api key", async () => {
    const s = system();
    const kids = ["ak_nope", `ak_${"A".repeat(24)}`, `ak_${"0".repeat(25)}`, "x".repeat(128), s.tenant.apiKey.toUpperCase(), " ", "ak_ ../x"];
    for (const kid of kids) expect(await s.outcome(await s.token(kid)), kid).toBe("UNAUTHENTICATED");
    expect(s.lookups).toEqual([]);
  });

  it("looks an unknown kid up again once its 5 s have passed", async () => {
    const s = system();
    const kid = apiKeyShaped();
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now());
    const t = await s.token(kid);
    expect(await s.outcome(t)).toBe("UNAUTHENTICATED");
    vi.setSystemTime(Date.now() + 4_900);
    expect(await s.outcome(t)).toBe("UNAUTHENTICATED");
    expect(s.lookups).toHaveLength(1);
    vi.setSystemTime(Date.now() + 200);
    expect(await s.outcome(t)).toBe("UNAUTHENTICATED");
    expect(s.lookups).toHaveLength(2);
  });

  it("stamps a tenant's version only once the tenant is known to exist, under the tenant's tag", async () => {
    const s = system();
    const stamp = tenantVersionKey(conn, s.tenant.id);
    expect(stamp).toBe(`${namespace}:{t:${s.tenant.id}}:ver`);
    expect(await conn.redis.exists(stamp)).toBe(0);
    expect(await s.outcome(await s.token(s.tenant.apiKey))).toBe("server");
    expect(await conn.redis.ttl(stamp)).toBe(-1);
    expect(await keysOf(s.tenant.apiKey)).toEqual([]);
    // No stamp yet: the look-up that named the tenant is as current as a second one.
    expect(s.lookups).toHaveLength(1);
  });
});

describe("tenant authenticator: the version stamp", () => {
  it("does not keep a credential read before a rotation that stamped the tenant first", async () => {
    // The rotation lands while the first lookup is in flight: MongoDB answered the old secret,
    // then the rotation wrote the new secret and its stamp, before the gateway stamps the tenant.
    const oldSecret = randomBytes(32).toString("base64url");
    const s = system({
      onLookup: async (apiKey, call) => {
        if (call !== 1) return undefined;
        if (apiKey === s.tenant.apiKey) await conn.redis.set(tenantVersionKey(conn, s.tenant.id), randomUUID());
        return oldSecret;
      },
    });
    const stale = await s.token(s.tenant.apiKey, oldSecret);
    const fresh = await s.token(s.tenant.apiKey);
    expect(await s.outcome(stale)).toBe("UNAUTHENTICATED");
    expect(await s.outcome(fresh)).toBe("server");
    expect(await s.outcome(stale)).toBe("UNAUTHENTICATED");
    expect(s.lookups).toHaveLength(2);
  });
});
