import { randomUUID } from "node:crypto";
import { decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import {
  forbidden,
  fromRpcError,
  isCode,
  rateLimited,
  scope,
  unauthenticated,
  type Config,
  type RedisConn,
} from "@feeds/kit";
import { TenantStatus, type Tenant } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import type { Operator } from "@feeds/proto/feeds/identity/v1/identity";
import { tenantVersionKey } from "@feeds/tenancy";
import { revocationKey, REVOCATION_TTL_SECONDS } from "@feeds/identity";
import type { Clients } from "./system.js";
import type { RateLimiter } from "./rate-limit.js";

export type TenantAuth =
  | { kind: "server"; tenant: Tenant }
  | { kind: "user"; tenant: Tenant; userId: string };

interface Credential {
  tenant: Tenant;
  key: Uint8Array;
  /** The Redis version stamp this credential was read under. */
  version: string;
}

interface Verified {
  claims: JWTPayload;
  version: string;
  expMs: number;
}

const MAX_VERIFIED = 20_000;
// A credential entry is trusted for at most this long even if no change signal arrives.
const CREDENTIAL_TTL_MS = 60_000;

/**
 * Verifies server and user tokens (contract section 1) with caches that still honour rotation,
 * suspension and revocation on the next request: each request reads the tenant's version stamp
 * and the user's revocation stamp from Redis in the same round trip as its rate-limit count.
 */
export function createTenantAuthenticator(deps: {
  clients: Clients;
  redis: RedisConn;
  limiter: RateLimiter;
  config: Config;
}) {
  const { clients, redis, limiter, config } = deps;
  const credentials = new Map<string, { cred: Credential; at: number }>();
  const verified = new Map<string, Verified>();

  async function loadCredential(apiKey: string): Promise<Credential | null> {
    const vk = tenantVersionKey(redis, apiKey);
    // Read (or create) the version before reading MongoDB: a change after this point bumps it.
    let version = await redis.redis.get(vk);
    if (version === null) {
      await redis.redis.set(vk, randomUUID(), "NX");
      version = (await redis.redis.get(vk)) ?? "";
    }
    try {
      const res = await clients.tenancy.getCredential({ apiKey });
      if (!res.tenant) return null;
      const cred = { tenant: res.tenant, key: new TextEncoder().encode(res.apiSecret), version };
      credentials.set(apiKey, { cred, at: Date.now() });
      return cred;
    } catch (e) {
      const err = fromRpcError(e);
      if (err.code === "NOT_FOUND") {
        credentials.delete(apiKey);
        return null;
      }
      throw err;
    }
  }

  async function credentialFor(apiKey: string): Promise<Credential | null> {
    const hit = credentials.get(apiKey);
    if (hit && Date.now() - hit.at < CREDENTIAL_TTL_MS) return hit.cred;
    return loadCredential(apiKey);
  }

  async function verify(token: string, cred: Credential): Promise<JWTPayload | null> {
    const cached = verified.get(token);
    if (cached && cached.version === cred.version && cached.expMs > Date.now()) return cached.claims;
    try {
      const { payload } = await jwtVerify(token, cred.key, { algorithms: ["HS256"], clockTolerance: 5 });
      if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value as string);
      const expMs = payload.exp ? (payload.exp + 5) * 1000 : Date.now() + 3600_000;
      verified.set(token, { claims: payload, version: cred.version, expMs });
      return payload;
    } catch {
      return null;
    }
  }

  async function revokedBefore(tenantId: string, userId: string, stamp: string, requestId: string): Promise<number> {
    if (stamp !== "") return Number(stamp);
    let ms = 0;
    try {
      const res = await clients.users.getUser({ id: userId }, scope({ tenantId, requestId }));
      ms = res.user?.revokedBefore ? Number(res.user.revokedBefore.seconds) * 1000 + Math.floor(res.user.revokedBefore.nanos / 1e6) : 0;
    } catch (e) {
      if (!isCode(fromRpcError(e), "NOT_FOUND")) throw fromRpcError(e);
    }
    // NX: never overwrite a stamp that a revocation wrote meanwhile.
    await redis.redis.set(revocationKey(redis, tenantId, userId), String(ms), "EX", REVOCATION_TTL_SECONDS, "NX");
    return ms;
  }

  return {
    async authenticate(
      authorization: string | undefined,
      windowName: "normal" | "batch",
      requestId: string,
    ): Promise<TenantAuth> {
      const token = authorization?.startsWith("Bearer ") ? authorization.slice(7).trim() : "";
      if (!token || token.split(".").length !== 3) throw unauthenticated();
      let kid: string | undefined;
      try {
        const header = decodeProtectedHeader(token);
        if (header.alg !== "HS256") throw unauthenticated();
        kid = header.kid;
      } catch {
        throw unauthenticated();
      }
      if (!kid || kid.length > 128) throw unauthenticated();

      let cred = await credentialFor(kid);
      if (!cred) throw unauthenticated();
      let claims = await verify(token, cred);
      if (!claims) {
        // Perhaps the secret changed since we cached it: re-read when the stamp moved.
        const current = await redis.redis.get(tenantVersionKey(redis, kid));
        if (current === cred.version) throw unauthenticated();
        cred = await loadCredential(kid);
        claims = cred && (await verify(token, cred));
        if (!cred || !claims) throw unauthenticated();
      }

      const userId = typeof claims.user_id === "string" ? claims.user_id : null;
      const isServer = claims.server === true && userId === null;
      if (!isServer && (userId === null || typeof claims.exp !== "number" || typeof claims.iat !== "number")) {
        throw unauthenticated();
      }

      const tenantId = cred.tenant.id;
      const stamps = await limiter.tenantRequest(
        tenantId,
        windowName,
        tenantVersionKey(redis, kid),
        userId ? revocationKey(redis, tenantId, userId) : null,
      );
      if (stamps.version !== cred.version) {
        // Rotated, suspended or reactivated since cached: this request already sees the change.
        cred = await loadCredential(kid);
        if (!cred || !(await verify(token, cred))) throw unauthenticated();
      }
      if (cred.tenant.status !== TenantStatus.ACTIVE) throw forbidden("tenant suspended");
      if (userId) {
        const rv = await revokedBefore(tenantId, userId, stamps.revokedBefore, requestId);
        if ((claims.iat ?? 0) * 1000 < rv) throw unauthenticated();
      }
      const limit =
        windowName === "batch"
          ? config.BATCH_RATE_LIMIT_PER_MINUTE
          : cred.tenant.rateLimitPerMinute || config.DEFAULT_RATE_LIMIT_PER_MINUTE;
      if (stamps.count > limit) throw rateLimited(stamps.window.retryAfter);
      return userId ? { kind: "user", tenant: cred.tenant, userId } : { kind: "server", tenant: cred.tenant };
    },
  };
}

export type TenantAuthenticator = ReturnType<typeof createTenantAuthenticator>;

/** Operator session tokens are opaque; identity resolves them on every request (no cache, so
 * logout and disable take effect at once). */
export async function authenticateOperator(
  clients: Clients,
  authorization: string | undefined,
  requestId: string,
): Promise<{ token: string; operator: Operator }> {
  const token = authorization?.startsWith("Bearer ") ? authorization.slice(7).trim() : "";
  if (!token || token.length > 512 || token.includes(".")) throw unauthenticated();
  try {
    const res = await clients.operators.authenticate({ token }, scope({ requestId }));
    if (!res.operator) throw unauthenticated();
    return { token, operator: res.operator };
  } catch (e) {
    throw fromRpcError(e);
  }
}
