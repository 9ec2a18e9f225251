import { processMetrics, redisScript, type RedisConn } from "@feeds/kit";
import { plain, type ActivityDoc } from "./activity-repository.js";

// Activities by id in Redis, each with its version. A write replaces an entry only with a newer
// version, so a reader that fetched an older copy from MongoDB cannot put it back over a patch or
// a delete (deleted activities are cached as tombstones). Entries expire; MongoDB stays the truth.

const TTL_SECONDS = 120;

/** Lua: stores `value` (version `v`, text) at `k` for `ttl` s unless a newer version is there;
 * shared with the head script of the write path (heads.ts). */
export const PUT_ONE = `
local function put(k, v, value, ttl)
  local cur = redis.call('GET', k)
  if cur then
    local cv = tonumber(string.match(cur, '^(%d+)|'))
    if cv and cv > tonumber(v) then return end
  end
  redis.call('SET', k, v .. '|' .. value, 'EX', ttl)
end
`;

const PUT = `${PUT_ONE}
for i = 1, #KEYS do put(KEYS[i], ARGV[i * 2 - 1], ARGV[i * 2], ARGV[#ARGV]) end
return 1
`;

/** One activity as the cache stores it: key, version, value, TTL (the arguments of PUT_ONE's put). */
export interface CacheEntry {
  key: string;
  version: string;
  value: string;
  ttl: string;
}

interface Cached extends Omit<ActivityDoc, "time" | "edited_at" | "deleted_at" | "created_at" | "outbox" | "outbox_pending"> {
  time: number;
  edited_at: number | null;
  deleted_at: number | null;
  created_at: number;
}

/** The activity as cached: without its pending changes (they belong to MongoDB's copy). */
const freeze = (d: ActivityDoc): Cached => ({
  ...plain(d),
  time: d.time.getTime(),
  edited_at: d.edited_at?.getTime() ?? null,
  deleted_at: d.deleted_at?.getTime() ?? null,
  created_at: d.created_at.getTime(),
});
const thaw = (c: Cached): ActivityDoc => ({
  ...c,
  time: new Date(c.time),
  edited_at: c.edited_at === null ? null : new Date(c.edited_at),
  deleted_at: c.deleted_at === null ? null : new Date(c.deleted_at),
  created_at: new Date(c.created_at),
});

export function createActivityCache(conn: RedisConn) {
  const { redis } = conn;
  const put = redisScript(redis, PUT);
  const key = (t: string, id: string) => conn.tenantKey(t, "act", id);
  const entry = (d: ActivityDoc): CacheEntry => ({ key: key(d.tenant_id, d._id), version: String(d.version), value: JSON.stringify(freeze(d)), ttl: String(TTL_SECONDS) });
  const hits = processMetrics().cacheRequests.labels({ cache: "activity", result: "hit" });
  const misses = processMetrics().cacheRequests.labels({ cache: "activity", result: "miss" });
  return {
    /** `doc` as putMany would store it, for a script that stores it beside other writes. */
    entry,
    async getMany(tenantId: string, ids: string[]): Promise<Map<string, ActivityDoc>> {
      const out = new Map<string, ActivityDoc>();
      if (!ids.length) return out;
      const values = await redis.mget(ids.map((id) => key(tenantId, id)));
      values.forEach((v, i) => {
        if (!v) return;
        const bar = v.indexOf("|");
        out.set(ids[i] as string, thaw(JSON.parse(v.slice(bar + 1)) as Cached));
      });
      hits.inc(out.size);
      misses.inc(ids.length - out.size);
      return out;
    },
    /** Stores each document unless a newer version is cached already (one call per tenant: a
     * script touches keys of one hash tag). */
    async putMany(docs: ActivityDoc[]): Promise<void> {
      const byTenant = new Map<string, ActivityDoc[]>();
      for (const d of docs) {
        const list = byTenant.get(d.tenant_id);
        if (list) list.push(d);
        else byTenant.set(d.tenant_id, [d]);
      }
      await Promise.all(
        [...byTenant].map(([tenantId, ds]) => {
          const ks = ds.map((d) => key(tenantId, d._id));
          const args = ds.flatMap((d) => [String(d.version), JSON.stringify(freeze(d))]);
          return put(ks.length, ...ks, ...args, String(TTL_SECONDS));
        }),
      );
    },
  };
}

export type ActivityCache = ReturnType<typeof createActivityCache>;
