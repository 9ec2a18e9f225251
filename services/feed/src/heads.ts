import { processMetrics, redisScript, type RedisConn, type RedisScript } from "@feeds/kit";
import { BUMP_ONE, signalKey } from "./signals.js";
import { PUT_ONE, type CacheEntry } from "./activity-cache.js";

// Each live feed's head in Redis: a sorted set of its newest entries (member = activity id,
// score = time in ms; equal scores order by id, as the feed does), bounded to CAP. It is a cache
// of MongoDB: a missing head is rebuilt from the feed entries, a head created by a write that
// found none is marked partial until a rebuild merges the rest, and "complete" says the head
// holds the whole feed (so a short first page needs no database read).

export const HEAD_CAP = 101;
const TTL_SECONDS = 3600;

/** Lua: the head's entry added, the head trimmed to `cap` (a trimmed head no longer holds the
 * whole feed); `addOne` also creates a missing head, marked partial. Shared by the scripts below. */
const ADD_ONE = `
local function addCapped(head, complete, cap, score, member)
  redis.call('ZADD', head, score, member)
  if redis.call('ZCARD', head) > cap then
    redis.call('ZREMRANGEBYRANK', head, 0, -(cap + 1))
    redis.call('DEL', complete)
  end
end
local function addOne(head, partial, complete, cap, ttl, score, member)
  if redis.call('EXISTS', head) == 0 then
    redis.call('SET', partial, '1', 'EX', ttl)
  end
  addCapped(head, complete, cap, score, member)
  redis.call('EXPIRE', head, ttl)
end
`;

// KEYS: (head, partial, complete) per feed; ARGV: cap, ttl, score, member (also ADD_EXISTING's).
const ADD = `${ADD_ONE}
local cap, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 1, #KEYS, 3 do addOne(KEYS[i], KEYS[i + 1], KEYS[i + 2], cap, ttl, ARGV[3], ARGV[4]) end
return 1
`;

// A batch import's entries: added to the heads that exist, and creating none (an import of many
// activities to many feeds leaves no keys behind); a feed known to be empty (its complete mark
// alone) loses the mark, so that its next read looks at MongoDB.
const ADD_EXISTING = `${ADD_ONE}
local cap = tonumber(ARGV[1])
for i = 1, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then addCapped(KEYS[i], KEYS[i + 2], cap, ARGV[3], ARGV[4])
  else redis.call('DEL', KEYS[i + 2]) end
end
return 1
`;

// The write path's origin feed: ADD for one feed (KEYS 1-3), then its change signal (KEYS[4])
// moved forward when someone has read it (signals.ts), in one round trip and in that order (a
// reader woken by the signal finds the head holding the entry), and the activity stored in the
// activity cache (KEYS[5], activity-cache.ts).
const ADD_AND_BUMP = `${ADD_ONE}${BUMP_ONE}${PUT_ONE}
addOne(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4])
bump(KEYS[4], tonumber(ARGV[5]))
put(KEYS[5], ARGV[6], ARGV[7], ARGV[8])
return 1
`;

// Merges entries read from MongoDB: never drops what a concurrent write added meanwhile.
const REBUILD = `
local head, partial, complete = KEYS[1], KEYS[2], KEYS[3]
local cap = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local whole = ARGV[3]
for i = 4, #ARGV, 2 do
  redis.call('ZADD', head, ARGV[i], ARGV[i + 1])
end
if redis.call('ZCARD', head) > cap then
  redis.call('ZREMRANGEBYRANK', head, 0, -(cap + 1))
  whole = '0'
end
redis.call('DEL', partial)
if whole == '1' then redis.call('SET', complete, '1', 'EX', ttl) else redis.call('DEL', complete) end
if redis.call('EXISTS', head) == 1 then redis.call('EXPIRE', head, ttl) end
return 1
`;


export interface HeadEntry {
  id: string;
  timeMs: number;
}

export function createHeads(conn: RedisConn) {
  const { redis } = conn;
  const add = redisScript(redis, ADD);
  const rebuild = redisScript(redis, REBUILD);
  const addBump = redisScript(redis, ADD_AND_BUMP);
  const addExisting = redisScript(redis, ADD_EXISTING);
  // A tenant's heads, signals and cached activities share its hash tag: one script adds an entry
  // to up to 200 of its feeds, or to a head, its signal and the activity cache together.
  const keys = (t: string, feed: string) => [conn.tenantKey(t, "head", feed), conn.tenantKey(t, "headp", feed), conn.tenantKey(t, "headc", feed)] as const;
  /** `script` (ADD or ADD_EXISTING) over `feeds`, 200 feeds a call. */
  async function perBatch(script: RedisScript, tenantId: string, feeds: string[], entry: HeadEntry): Promise<void> {
    for (let i = 0; i < feeds.length; i += 200) {
      const ks = feeds.slice(i, i + 200).flatMap((f) => keys(tenantId, f));
      await script(ks.length, ...ks, String(HEAD_CAP), String(TTL_SECONDS), String(entry.timeMs), entry.id);
    }
  }
  const hits = processMetrics().cacheRequests.labels({ cache: "head", result: "hit" });
  const misses = processMetrics().cacheRequests.labels({ cache: "head", result: "miss" });

  return {
    /** Adds one activity to the heads of `feeds` (live writes only; batch imports write none). */
    add: (tenantId: string, feeds: string[], entry: HeadEntry) => perBatch(add, tenantId, feeds, entry),
    /** A batch import's `add`: only to the heads of `feeds` that exist (see ADD_EXISTING). */
    addExisting: (tenantId: string, feeds: string[], entry: HeadEntry) => perBatch(addExisting, tenantId, feeds, entry),
    /** `add` of one feed, its signal's bump (signals.ts) and the activity's cache entry, in one call. */
    async addAndBump(tenantId: string, feed: string, entry: HeadEntry, cached: CacheEntry): Promise<void> {
      const ks = [...keys(tenantId, feed), signalKey(conn, tenantId, feed), cached.key];
      await addBump(5, ...ks, String(HEAD_CAP), String(TTL_SECONDS), String(entry.timeMs), entry.id, String(Date.now()), cached.version, cached.value, cached.ttl);
    },
    async remove(tenantId: string, feeds: string[], id: string): Promise<void> {
      const p = redis.pipeline();
      for (const f of feeds) p.zrem(keys(tenantId, f)[0], id);
      await p.exec();
    },
    /** Forgets a head (history copied or removed): the next read rebuilds it. */
    async invalidate(tenantId: string, feed: string): Promise<void> {
      await redis.del(...keys(tenantId, feed));
    },
    /**
     * The newest `n` entries, or null when the head cannot answer alone (missing or partial).
     * `complete`: the head holds the whole feed.
     */
    async newest(tenantId: string, feed: string, n: number): Promise<{ entries: HeadEntry[]; complete: boolean } | null> {
      const [head, partial, complete] = keys(tenantId, feed);
      // Commands of one tick, auto-pipelined (kit's connection) into one write with the other
      // requests' commands of that tick.
      const [range, isPartial, isComplete, exists] = await Promise.all([
        redis.zrevrange(head, 0, n - 1, "WITHSCORES"),
        redis.exists(partial),
        redis.exists(complete),
        redis.exists(head),
      ]);
      // A whole feed with no entries has no head, only its complete mark.
      if (exists !== 1 && isComplete === 1 && isPartial !== 1) {
        hits.inc();
        return { entries: [], complete: true };
      }
      if (exists !== 1 || isPartial === 1) {
        misses.inc();
        return null;
      }
      hits.inc();
      const entries: HeadEntry[] = [];
      for (let i = 0; i < range.length; i += 2) entries.push({ id: range[i] as string, timeMs: Number(range[i + 1]) });
      return { entries, complete: isComplete === 1 };
    },
    /** Merges the newest entries read from MongoDB; `whole` when they are the entire feed. */
    async rebuild(tenantId: string, feed: string, entries: HeadEntry[], whole: boolean): Promise<void> {
      const ks = keys(tenantId, feed);
      await rebuild(3, ...ks, String(HEAD_CAP), String(TTL_SECONDS), whole ? "1" : "0", ...entries.flatMap((e) => [String(e.timeMs), e.id]));
    },
  };
}

export type Heads = ReturnType<typeof createHeads>;
