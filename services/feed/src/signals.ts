import { redisScript, type RedisConn } from "@feeds/kit";

// Each feed's change signal: a version in Redis that only moves forward. A bump sets it to
// max(old + 1, now in ms), so a Redis that lost its data never hands out an old version again.
// A version exists only once someone has read it: a missing one starts at now when read, which is
// past every version handed out before (they were bumps' "now" or below), so a write need not
// create it. Writes therefore move only the versions that exist: a fan-out to 100,000 followers,
// most of whom never poll, leaves no 100,000 keys for 30 days.

const TTL_SECONDS = 2_592_000;

/** The version of an empty feed whose version was never stored: below every stored one. */
export const EMPTY_VERSION = 0;

/** Lua: moves the version at key `k` forward when it exists (`now`: the caller's clock in ms);
 * shared with the head script that adds an entry and bumps in one call. */
export const BUMP_ONE = `
local function bump(k, now)
  local v = tonumber(redis.call('GET', k))
  if v == nil then return end
  local n = v + 1
  if now > n then n = now end
  redis.call('SET', k, n, 'EX', ${TTL_SECONDS})
end
`;

const BUMP = `${BUMP_ONE}
local now = tonumber(ARGV[1])
for _, k in ipairs(KEYS) do bump(k, now) end
return 1
`;

export const signalKey = (conn: RedisConn, tenantId: string, feed: string) => conn.tenantKey(tenantId, "fv", feed);

export function createSignals(conn: RedisConn) {
  const bump = redisScript<number>(conn.redis, BUMP);
  const key = (tenantId: string, feed: string) => signalKey(conn, tenantId, feed);
  return {
    /** Moves the version of every named feed forward (those someone has read; see above). */
    async bump(tenantId: string, feeds: string[]): Promise<void> {
      for (let i = 0; i < feeds.length; i += 500) {
        const keys = feeds.slice(i, i + 500).map((f) => key(tenantId, f));
        await bump(keys.length, ...keys, String(Date.now()));
      }
    },
    /** The feed's stored version, or null when it has none. */
    async peek(tenantId: string, feed: string): Promise<number | null> {
      const v = await conn.redis.get(key(tenantId, feed));
      return v === null ? null : Number(v);
    },
    /** The feed's version; a missing one (never read, or Redis lost it) starts at now. */
    async version(tenantId: string, feed: string): Promise<number> {
      const k = key(tenantId, feed);
      const v = await conn.redis.get(k);
      if (v !== null) return Number(v);
      // NX: a version a racing reader or writer set meanwhile stands.
      await conn.redis.set(k, String(Date.now()), "EX", TTL_SECONDS, "NX");
      return Number(await conn.redis.get(k));
    },
  };
}

export type Signals = ReturnType<typeof createSignals>;
