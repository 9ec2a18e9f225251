import { processMetrics, rateLimited, type RedisConn } from "@feeds/kit";

// One round trip per authenticated request: count the request in its window, and read the
// tenant's credential version and (for user tokens) the user's revocation stamp.
const AUTH_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local v = redis.call('GET', KEYS[2]) or ''
local rv = ''
if #KEYS > 2 then rv = redis.call('GET', KEYS[3]) or '' end
return {n, v, rv}
`;

// Counts one attempt in several windows at once (login: per address and per email).
const HIT_SCRIPT = `
local out = {}
for i, k in ipairs(KEYS) do
  local n = redis.call('INCR', k)
  if n == 1 then redis.call('EXPIRE', k, ARGV[1]) end
  out[i] = n
end
return out
`;

type AuthFn = (numKeys: number, ...args: string[]) => Promise<[number, string, string]>;
type HitFn = (numKeys: number, ...args: string[]) => Promise<number[]>;

const WINDOW_MS = 60_000;

export interface Window {
  id: number;
  /** Whole seconds until the window ends, at least 1 (the Retry-After of a 429). */
  retryAfter: number;
}

export function currentWindow(now = Date.now()): Window {
  const id = Math.floor(now / WINDOW_MS);
  return { id, retryAfter: Math.max(1, Math.ceil(((id + 1) * WINDOW_MS - now) / 1000)) };
}

export function createRateLimiter(conn: RedisConn) {
  const { redis } = conn;
  redis.defineCommand("feedsAuth", { lua: AUTH_SCRIPT });
  redis.defineCommand("feedsHit", { lua: HIT_SCRIPT });
  const auth = (redis as unknown as { feedsAuth: AuthFn }).feedsAuth.bind(redis);
  const hit = (redis as unknown as { feedsHit: HitFn }).feedsHit.bind(redis);
  const refused = processMetrics().rateLimited;
  return {
    /** The 429 of a request over its window's limit, counted by kind (normal, batch, login, invite). */
    refusal(kind: "normal" | "batch" | "login" | "invite", window: Window) {
      refused.inc({ kind });
      return rateLimited(window.retryAfter);
    },
    /** Counts a tenant request in its window ("normal" or "batch") and reads the change stamps. */
    async tenantRequest(
      tenantId: string,
      windowName: "normal" | "batch",
      versionKey: string,
      revocationKey: string | null,
    ): Promise<{ count: number; window: Window; version: string; revokedBefore: string }> {
      const window = currentWindow();
      const keys = [conn.key("rl", windowName, tenantId, String(window.id)), versionKey];
      if (revocationKey) keys.push(revocationKey);
      const [count, version, revokedBefore] = await auth(keys.length, ...keys, "61");
      return { count, window, version, revokedBefore };
    },
    /** Counts one attempt under each of the given names; answers the highest count. */
    async hit(kind: string, names: string[]): Promise<{ count: number; window: Window }> {
      const window = currentWindow();
      const keys = names.map((n) => conn.key("rl", kind, n, String(window.id)));
      const counts = await hit(keys.length, ...keys, "61");
      return { count: Math.max(...counts), window };
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
