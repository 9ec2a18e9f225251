import { decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import type { Client } from "@connectrpc/connect";
import {
  forbidden,
  fromRpcError,
  internal,
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
import type { AuthFailureBudget } from "./auth-failures.js";
import type { RateLimiter, RateState } from "./rate-limit.js";
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
/** Contract section 1: the clock tolerance of every time claim (seconds). */
const CLOCK_TOLERANCE_S = 5;
/** Stale stamps reloaded, or a revocation stamp filled, before a request gives up (500). */
const MAX_ROUNDS = 3;

/** Bearer token of an Authorization header ("" when there is none). */
export const bearerOf = (authorization: string | undefined): string =>
  authorization?.startsWith("Bearer ") ? authorization.slice(7).trim() : "";

/** Server and user tokens are JWTs; operator session tokens are opaque and hold no dot. */
export const isJwtShaped = (token: string): boolean => token.split(".").length === 3;

/**
 * The kind of a verified token, decided by the claim it carries (contract section 1): `user_id`
 * makes a user token and must be an id (section 4), `server: true` alone a server token.
 */
function kindOf(claims: JWTPayload): { kind: "server" } | { kind: "user"; userId: string; iat: number } {
  if ("user_id" in claims) {
    const userId = claims.user_id;
    if ("server" in claims) throw unauthenticated("token claims both server and user_id");
    if (typeof userId !== "string" || !isId(userId)) throw unauthenticated("user_id is not an id");
    if (typeof claims.exp !== "number" || typeof claims.iat !== "number") throw unauthenticated("user token without exp or iat");
    return { kind: "user", userId, iat: claims.iat };
  }
  if (claims.server === true) return { kind: "server" };
  throw unauthenticated("token is neither a server nor a user token");
}

/** What one authentication asks of the tenant's windows. */
export interface TenantRequest {
  windowName: "normal" | "batch";
  /** How many times the request counts (limits.rateWeights). */
  weight: number;
  requestId: string;
  /** The client address (per-address budget of failed authentications). */
  address: string;
  /** Receives where the caller stands in its window once it is known (the RateLimit-* headers). */
  onRate?: (rate: RateState) => void;
}

/**
 * Verifies server and user tokens (contract section 1) with caches that still honour rotation,
 * suspension and revocation on the next request: each request reads the tenant's version stamp
 * and the user's revocation stamp from Redis in the same round trip as its rate-limit count,
 * which counts it only when both are current (rate-limit.ts).
 */
export function createTenantAuthenticator(deps: {
  clients: {
    tenancy: Pick<Client<typeof TenancyService>, "getCredential">;
    users: Pick<Client<typeof UserService>, "getRevocation">;
  };
  redis: RedisConn;
  limiter: RateLimiter;
  failures: AuthFailureBudget;
  config: Pick<Config, "DEFAULT_RATE_LIMIT_PER_MINUTE" | "BATCH_RATE_LIMIT_PER_MINUTE" | "USER_RATE_LIMIT_PERCENT" | "SERVER_RESERVED_RATE_PERCENT">;
}) {
  const { clients, redis, limiter, config } = deps;
  const credentials = createCredentialStore({ tenancy: clients.tenancy, redis });
  const verified = new Map<string, Verified>();

  async function verify(token: string, cred: Credential): Promise<JWTPayload | null> {
    const cached = verified.get(token);
    if (cached && cached.version === cred.version && cached.expMs > Date.now()) return cached.claims;
    try {
      const { payload } = await jwtVerify(token, cred.key, { algorithms: ["HS256"], clockTolerance: CLOCK_TOLERANCE_S });
      // jose checks iat only with maxTokenAge: a token "issued" in the future would outlive a
      // revocation (its iat stays later than revoked_before).
      if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + CLOCK_TOLERANCE_S) return null;
      if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value as string);
      const expMs = payload.exp ? (payload.exp + CLOCK_TOLERANCE_S) * 1000 : Date.now() + 3600_000;
      verified.set(token, { claims: payload, version: cred.version, expMs });
      return payload;
    } catch {
      return null;
    }
  }

  /** Fills a missing revocation stamp from identity (NX: a revocation's own stamp wins). */
  async function fillRevocation(tenantId: string, userId: string, requestId: string): Promise<void> {
    const res = await clients.users.getRevocation({ id: userId }, scope({ tenantId, requestId }));
    const ms = fromTimestamp(res.revokedBefore)?.getTime() ?? 0;
    await redis.redis.set(revocationKey(redis, tenantId, userId), String(ms), "EX", REVOCATION_TTL_SECONDS, "NX");
  }

  /** The credential of `kid` that `token` verifies under, reloaded once if it may be stale. */
  async function credentialOf(kid: string, token: string, address: string): Promise<{ cred: Credential; claims: JWTPayload }> {
    if (!credentials.answersFromMemory(kid)) await deps.failures.check(address);
    let cred = await credentials.get(kid);
    if (!cred) throw unauthenticated("unknown api key");
    let claims = await verify(token, cred);
    if (!claims) {
      // Perhaps the secret changed since we cached it: re-read when the stamp moved.
      const current = await redis.redis.get(tenantVersionKey(redis, cred.tenant.id));
      if (current === cred.version) throw unauthenticated("bad signature, expired or issued in the future");
      cred = await credentials.reload(kid);
      claims = cred && (await verify(token, cred));
      if (!cred || !claims) throw unauthenticated("bad signature, expired or issued in the future");
    }
    return { cred, claims };
  }

  async function authenticate(authorization: string | undefined, r: TenantRequest): Promise<TenantAuth> {
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
    let { cred, claims } = await credentialOf(kid, token, r.address);
    const caller = kindOf(claims);
    const tenantId = cred.tenant.id;

    for (let round = 0; round < MAX_ROUNDS; round++) {
      const limit =
        r.windowName === "batch" ? config.BATCH_RATE_LIMIT_PER_MINUTE : cred.tenant.rateLimitPerMinute || config.DEFAULT_RATE_LIMIT_PER_MINUTE;
      const user =
        caller.kind === "user"
          ? { id: caller.userId, revocationKey: revocationKey(redis, tenantId, caller.userId), iatMs: caller.iat * 1000, cap: share(limit, config.USER_RATE_LIMIT_PERCENT) }
          : undefined;
      const counted = await limiter.count({
        tenantId,
        windowName: r.windowName,
        versionKey: tenantVersionKey(redis, tenantId),
        version: cred.version,
        suspended: cred.tenant.status !== TenantStatus.ACTIVE,
        weight: r.weight,
        tenantCap: caller.kind === "user" ? share(limit, 100 - config.SERVER_RESERVED_RATE_PERCENT) : limit,
        user,
      });
      switch (counted.outcome) {
        case "stale": {
          // Rotated, suspended or reactivated since cached: this request already sees the change.
          const fresh = await credentials.reload(kid);
          const again = fresh && (await verify(token, fresh));
          if (!fresh || !again) throw unauthenticated("bad signature after a credential change");
          cred = fresh;
          claims = again;
          continue;
        }
        case "suspended":
          throw forbidden("tenant suspended");
        case "revocation-unknown":
          if (caller.kind === "user") await fillRevocation(tenantId, caller.userId, r.requestId);
          continue;
        case "revoked":
          throw unauthenticated("token revoked");
        case "user-full":
        case "tenant-full":
          r.onRate?.(counted.rate);
          throw limiter.refusal(counted.outcome === "user-full" ? "user" : r.windowName, counted.window);
        case "counted":
          r.onRate?.(counted.rate);
          return caller.kind === "user" ? { kind: "user", tenant: cred.tenant, userId: caller.userId } : { kind: "server", tenant: cred.tenant };
      }
    }
    throw internal(new Error(`credential stamps of ${kid} kept moving`));
  }

  return {
    /** A tenant token's caller, counted in its windows; a 401 is counted against the address. */
    authenticate: (authorization: string | undefined, r: TenantRequest): Promise<TenantAuth> =>
      deps.failures.spend(r.address, () => authenticate(authorization, r)),
  };
}

/** `percent` of `limit`, at least 1. */
const share = (limit: number, percent: number) => Math.max(1, Math.floor((limit * percent) / 100));

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
