import { processMetrics, rateLimited, redisScript, type FeedsError, type RedisConn } from "@feeds/kit";

// Rate windows of one minute, counted in Redis so that every gateway replica shares them.
//
// A tenant request is counted by one script in one round trip, and only when its credential is
// current: the tenant's version stamp still matches the credential the token verified under, the
// tenant is active, and (user tokens) the user's revocation stamp is known and older than the
// token. Then, user tokens first: the user's own window (a share of the tenant's), then the
// tenant's window, of which user tokens together may fill only their part, so that server tokens
// always keep the rest. A window that would overflow refuses the request without counting it, so
// refused requests never spend a window. KEYS (all of the tenant's hash tag, so one script may
// touch them in a cluster): version stamp, tenant window, then for user tokens the revocation
// stamp and the user window. ARGV: expected version, suspended (1/0),
// weight, tenant cap, window TTL, token's iat (ms), user cap.
const TENANT_SCRIPT = `
local v = redis.call('GET', KEYS[1]) or ''
if v ~= ARGV[1] then return {1} end
if ARGV[2] == '1' then return {2} end
local w, ttl = tonumber(ARGV[3]), tonumber(ARGV[5])
local u = 0
if #KEYS > 2 then
  local rv = redis.call('GET', KEYS[3])
  if not rv then return {3} end
  if tonumber(rv) > tonumber(ARGV[6]) then return {4} end
  u = tonumber(redis.call('GET', KEYS[4]) or '0')
  if u + w > tonumber(ARGV[7]) then return {5, u} end
end
local t = tonumber(redis.call('GET', KEYS[2]) or '0')
if t + w > tonumber(ARGV[4]) then return {6, t, u} end
t = redis.call('INCRBY', KEYS[2], w)
if t == w then redis.call('EXPIRE', KEYS[2], ttl) end
if #KEYS > 2 then
  u = redis.call('INCRBY', KEYS[4], w)
  if u == w then redis.call('EXPIRE', KEYS[4], ttl) end
end
return {0, t, u}
`;

// Counts one attempt in one window (its count, and its lifetime when it is new).
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
`;


const WINDOW_MS = 60_000;
const WINDOW_TTL_S = "61";

export interface Window {
  id: number;
  /** Whole seconds until the window ends, at least 1 (the Retry-After of a 429). */
  retryAfter: number;
}

export function currentWindow(now = Date.now()): Window {
  const id = Math.floor(now / WINDOW_MS);
  return { id, retryAfter: Math.max(1, Math.ceil(((id + 1) * WINDOW_MS - now) / 1000)) };
}

/** Where a caller stands in the window that binds it: the RateLimit-* header fields. */
export interface RateState {
  limit: number;
  remaining: number;
  reset: number;
}

export type TenantCount =
  | { outcome: "counted" | "user-full" | "tenant-full"; rate: RateState; window: Window }
  | { outcome: "stale" | "suspended" | "revocation-unknown" | "revoked" };

export interface TenantCountRequest {
  tenantId: string;
  windowName: "normal" | "batch";
  versionKey: string;
  version: string;
  suspended: boolean;
  weight: number;
  /** The tenant window's cap for this caller (user tokens: their part of it). */
  tenantCap: number;
  /** User tokens: the user, its revocation stamp key, the token's iat (ms) and its window's cap. */
  user?: { id: string; revocationKey: string; iatMs: number; cap: number };
}

const OUTCOMES = ["counted", "stale", "suspended", "revocation-unknown", "revoked", "user-full", "tenant-full"] as const;

export function createRateLimiter(conn: RedisConn) {
  const { redis } = conn;
  const tenantCount = redisScript<number[]>(redis, TENANT_SCRIPT);
  const hit = redisScript<number>(redis, HIT_SCRIPT);
  /** A window of a name that is not a tenant's (a client address, an email): its own hash tag. */
  const windowOf = (kind: string, name: string, window: Window) => conn.taggedKey(name, "rl", kind, String(window.id));
  const refused = processMetrics().rateLimited;
  return {
    /** The 429 of a request over its window's limit, counted by kind (normal, batch, user, login, invite, auth). */
    refusal(kind: "normal" | "batch" | "user" | "login" | "invite" | "auth", window: Window): FeedsError {
      refused.inc({ kind });
      return rateLimited(window.retryAfter);
    },
    /** Checks a tenant request's stamps and, when they are current, counts it (see the script). */
    async count(q: TenantCountRequest): Promise<TenantCount> {
      const window = currentWindow();
      const w = String(window.id);
      const weight = Math.max(1, Math.min(q.weight, q.tenantCap, q.user?.cap ?? Infinity));
      const keys = [q.versionKey, conn.tenantKey(q.tenantId, "rl", q.windowName, w)];
      if (q.user) keys.push(q.user.revocationKey, conn.tenantKey(q.tenantId, "rl", "user", q.user.id, w));
      const args = [q.version, q.suspended ? "1" : "0", String(weight), String(q.tenantCap), WINDOW_TTL_S, String(q.user?.iatMs ?? 0), String(q.user?.cap ?? 0)];
      const [code = 0, tenantUsed = 0, userUsed = 0] = await tenantCount(keys.length, ...keys, ...args);
      const outcome = OUTCOMES[code] ?? "stale";
      if (outcome !== "counted" && outcome !== "user-full" && outcome !== "tenant-full") return { outcome };
      // The binding window: the one that refused, else the one with less left.
      const tenantLeft = q.tenantCap - tenantUsed;
      const userLeft = q.user ? q.user.cap - userUsed : Infinity;
      const rate =
        outcome === "user-full"
          ? { limit: q.user?.cap ?? 0, remaining: 0 }
          : outcome === "tenant-full"
            ? { limit: q.tenantCap, remaining: 0 }
            : userLeft < tenantLeft
              ? { limit: q.user?.cap ?? 0, remaining: userLeft }
              : { limit: q.tenantCap, remaining: tenantLeft };
      return { outcome, rate: { ...rate, reset: window.retryAfter }, window };
    },
    /**
     * Counts one attempt under each of the given names; answers the highest count. Each name's
     * window is counted on its own (in a cluster they live in different slots): a window's count
     * is all a caller compares, and each attempt adds one to each window either way.
     */
    async hit(kind: string, names: string[]): Promise<{ count: number; window: Window }> {
      const window = currentWindow();
      const counts = await Promise.all(names.map((n) => hit(1, windowOf(kind, n, window), WINDOW_TTL_S)));
      return { count: Math.max(...counts), window };
    },
    /** The count of one window without counting (0 when it has none). */
    async peek(kind: string, name: string): Promise<{ count: number; window: Window }> {
      const window = currentWindow();
      const v = await redis.get(windowOf(kind, name, window));
      return { count: Number(v ?? 0), window };
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
