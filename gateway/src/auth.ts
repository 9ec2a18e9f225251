import { decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import type { Client } from "@connectrpc/connect";
import {
  forbidden,
  fromRpcError,
  fromTimestamp,
  isId,
  REVOCATION_TTL_SECONDS,
  revocationKey,
  scope,
  tenantVersionKey,
  unauthenticated,
  type Clients,
  type Config,
  type RedisConn,
} from "@feeds/kit";
import { TenantStatus, type Tenant, type TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import type { Operator, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import type { RateLimiter } from "./rate-limit.js";
import { createCredentialStore, type Credential } from "./credentials.js";

export type TenantAuth =
  | { kind: "server"; tenant: Tenant }
  | { kind: "user"; tenant: Tenant; userId: string };

interface Verified {
  claims: JWTPayload;
  version: string;
  expMs: number;
}

const MAX_VERIFIED = 20_000;

/** The bearer token of an Authorization header ("" when there is none). */
export const bearerOf = (authorization: string | undefined): string =>
  authorization?.startsWith("Bearer ") ? authorization.slice(7).trim() : "";

/** Server and user tokens are JWTs; operator session tokens are opaque and hold no dot. */
export const isJwtShaped = (token: string): boolean => token.split(".").length === 3;

/**
 * The kind of a verified token, decided by the claim it carries (contract section 1): `user_id`
 * makes a user token and must be an id (section 4), `server: true` alone a server token.
 */
function kindOf(claims: JWTPayload): { kind: "server" } | { kind: "user"; userId: string } {
  if ("user_id" in claims) {
    const userId = claims.user_id;
    if ("server" in claims) throw unauthenticated("token claims both server and user_id");
    if (typeof userId !== "string" || !isId(userId)) throw unauthenticated("user_id is not an id");
    if (typeof claims.exp !== "number" || typeof claims.iat !== "number") throw unauthenticated("user token without exp or iat");
    return { kind: "user", userId };
  }
  if (claims.server === true) return { kind: "server" };
  throw unauthenticated("token is neither a server nor a user token");
}

/**
 * Verifies server and user tokens (contract section 1) with caches that still honour rotation,
 * suspension and revocation on the next request: each request reads the tenant's version stamp
 * and the user's revocation stamp from Redis in the same round trip as its rate-limit count.
 */
export function createTenantAuthenticator(deps: {
  clients: {
    tenancy: Pick<Client<typeof TenancyService>, "getCredential">;
    users: Pick<Client<typeof UserService>, "getRevocation">;
  };
  redis: RedisConn;
  limiter: RateLimiter;
  config: Pick<Config, "DEFAULT_RATE_LIMIT_PER_MINUTE" | "BATCH_RATE_LIMIT_PER_MINUTE">;
}) {
  const { clients, redis, limiter, config } = deps;
  const credentials = createCredentialStore({ tenancy: clients.tenancy, redis });
  const verified = new Map<string, Verified>();

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
    const res = await clients.users.getRevocation({ id: userId }, scope({ tenantId, requestId }));
    const ms = fromTimestamp(res.revokedBefore)?.getTime() ?? 0;
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
      const token = bearerOf(authorization);
      if (!token) throw unauthenticated("no bearer token");
      if (!isJwtShaped(token)) throw unauthenticated("not a JWT");
      let kid: unknown;
      try {
        const header = decodeProtectedHeader(token);
        if (header.alg !== "HS256") throw unauthenticated();
        kid = header.kid;
      } catch {
        throw unauthenticated("JWT header is malformed or not HS256");
      }
      if (typeof kid !== "string") throw unauthenticated("JWT without kid");

      let cred = await credentials.get(kid);
      if (!cred) throw unauthenticated("unknown api key");
      let claims = await verify(token, cred);
      if (!claims) {
        // Perhaps the secret changed since we cached it: re-read when the stamp moved.
        const current = await redis.redis.get(tenantVersionKey(redis, kid));
        if (current === cred.version) throw unauthenticated("bad signature or expired");
        cred = await credentials.reload(kid);
        claims = cred && (await verify(token, cred));
        if (!cred || !claims) throw unauthenticated("bad signature or expired");
      }
      const caller = kindOf(claims);

      const tenantId = cred.tenant.id;
      const stamps = await limiter.tenantRequest(
        tenantId,
        windowName,
        tenantVersionKey(redis, kid),
        caller.kind === "user" ? revocationKey(redis, tenantId, caller.userId) : null,
      );
      if (stamps.version !== cred.version) {
        // Rotated, suspended or reactivated since cached: this request already sees the change.
        cred = await credentials.reload(kid);
        if (!cred || !(await verify(token, cred))) throw unauthenticated("bad signature after a credential change");
      }
      if (cred.tenant.status !== TenantStatus.ACTIVE) throw forbidden("tenant suspended");
      if (caller.kind === "user") {
        const rv = await revokedBefore(tenantId, caller.userId, stamps.revokedBefore, requestId);
        if ((claims.iat ?? 0) * 1000 < rv) throw unauthenticated("token revoked");
      }
      const limit =
        windowName === "batch"
          ? config.BATCH_RATE_LIMIT_PER_MINUTE
          : cred.tenant.rateLimitPerMinute || config.DEFAULT_RATE_LIMIT_PER_MINUTE;
      if (stamps.count > limit) throw limiter.refusal(windowName, stamps.window);
      return caller.kind === "user" ? { kind: "user", tenant: cred.tenant, userId: caller.userId } : { kind: "server", tenant: cred.tenant };
    },
  };
}

export type TenantAuthenticator = ReturnType<typeof createTenantAuthenticator>;

/** Operator session tokens are opaque; identity resolves them on every request (no cache, so
 * logout and disable take effect at once). */
export async function authenticateOperator(
  clients: Pick<Clients, "operators">,
  authorization: string | undefined,
  requestId: string,
): Promise<{ token: string; operator: Operator }> {
  const token = bearerOf(authorization);
  if (!token || token.length > 512 || token.includes(".")) throw unauthenticated("not an operator session token");
  try {
    const res = await clients.operators.authenticate({ token }, scope({ requestId }));
    if (!res.operator) throw unauthenticated();
    return { token, operator: res.operator };
  } catch (e) {
    throw fromRpcError(e);
  }
}
