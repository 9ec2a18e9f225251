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

/** Lua: moves the versions that exist (someone read the feed's signal) and creates none. */
const BUMP_EXISTING = `${BUMP_ONE}
local now = tonumber(ARGV[1])
local n = 0
for _, k in ipairs(KEYS) do
  if redis.call('EXISTS', k) == 1 then
    bump(k, now)
    n = n + 1
  end
end
return n
`;

export const signalKey = (conn: RedisConn, tenantId: string, feed: string) => conn.key("fv", tenantId, feed);

type BumpFn = (numKeys: number, ...args: string[]) => Promise<number>;

export function createSignals(conn: RedisConn) {
  conn.redis.defineCommand("feedsBump", { lua: BUMP });
  conn.redis.defineCommand("feedsBumpExisting", { lua: BUMP_EXISTING });
  const commands = conn.redis as unknown as { feedsBump: BumpFn; feedsBumpExisting: BumpFn };
  const bump = commands.feedsBump.bind(conn.redis);
  const bumpExisting = commands.feedsBumpExisting.bind(conn.redis);
  const key = (tenantId: string, feed: string) => signalKey(conn, tenantId, feed);
  const each = async (fn: BumpFn, tenantId: string, feeds: string[]) => {
    for (let i = 0; i < feeds.length; i += 500) {
      const keys = feeds.slice(i, i + 500).map((f) => key(tenantId, f));
      await fn(keys.length, ...keys, String(Date.now()));
    }
  };
  return {
    /** Moves the version of every named feed forward. */
    bump: (tenantId: string, feeds: string[]): Promise<void> => each(bump, tenantId, feeds),
    /**
     * Moves the versions of the named feeds whose signal someone has read (a batch import: its
     * feeds' watchers learn of it, and a large import creates no key per follower feed). A
     * version Redis lost meanwhile starts at now on its next read, past every version handed out.
     */
    bumpExisting: (tenantId: string, feeds: string[]): Promise<void> => each(bumpExisting, tenantId, feeds),
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
