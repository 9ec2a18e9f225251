import type { RedisConn } from "@feeds/kit";

// Each feed's change signal: a version in Redis that only moves forward. A bump sets it to
// max(old + 1, now in ms), so a Redis that lost its data never hands out an old version again.

/** Lua: moves the version at key `k` forward (`now`: the caller's clock in ms); shared with the
 * head script that adds an entry and bumps in one call. */
export const BUMP_ONE = `
local function bump(k, now)
  local v = tonumber(redis.call('GET', k) or '0')
  local n = v + 1
  if now > n then n = now end
  redis.call('SET', k, n, 'EX', 2592000)
end
`;

const BUMP = `${BUMP_ONE}
local now = tonumber(ARGV[1])
for _, k in ipairs(KEYS) do bump(k, now) end
return #KEYS
`;

export const signalKey = (conn: RedisConn, tenantId: string, feed: string) => conn.key("fv", tenantId, feed);

type BumpFn = (numKeys: number, ...args: string[]) => Promise<number>;

export function createSignals(conn: RedisConn) {
  conn.redis.defineCommand("feedsBump", { lua: BUMP });
  const bump = (conn.redis as unknown as { feedsBump: BumpFn }).feedsBump.bind(conn.redis);
  const key = (tenantId: string, feed: string) => signalKey(conn, tenantId, feed);
  return {
    /** Moves the version of every named feed forward. */
    async bump(tenantId: string, feeds: string[]): Promise<void> {
      for (let i = 0; i < feeds.length; i += 500) {
        const keys = feeds.slice(i, i + 500).map((f) => key(tenantId, f));
        await bump(keys.length, ...keys, String(Date.now()));
      }
    },
    /** The feed's version; a missing key (never changed, or Redis lost it) starts at now. */
    async version(tenantId: string, feed: string): Promise<number> {
      const k = key(tenantId, feed);
      const v = await conn.redis.get(k);
      if (v !== null) return Number(v);
      await bump(1, k, String(Date.now()));
      return Number(await conn.redis.get(k));
    },
  };
}

export type Signals = ReturnType<typeof createSignals>;
