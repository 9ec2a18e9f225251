import { processMetrics, type RedisConn } from "@feeds/kit";
import type { ActivityDoc } from "./activity-repository.js";

// Activities by id in Redis, each with its version. A write replaces an entry only with a newer
// version, so a reader that fetched an older copy from MongoDB cannot put it back over a patch or
// a delete (deleted activities are cached as tombstones). Entries expire; MongoDB stays the truth.

const TTL_SECONDS = 120;

const PUT = `
for i = 1, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  local v = tonumber(ARGV[i * 2 - 1])
  local older = false
  if cur then
    local cv = tonumber(string.match(cur, '^(%d+)|'))
    if cv and cv > v then older = true end
  end
  if not older then redis.call('SET', KEYS[i], ARGV[i * 2 - 1] .. '|' .. ARGV[i * 2], 'EX', ARGV[#ARGV]) end
end
return 1
`;

type Script = (numKeys: number, ...args: string[]) => Promise<unknown>;

interface Cached extends Omit<ActivityDoc, "time" | "edited_at" | "deleted_at" | "created_at"> {
  time: number;
  edited_at: number | null;
  deleted_at: number | null;
  created_at: number;
}

const freeze = (d: ActivityDoc): Cached => ({
  ...d,
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
  redis.defineCommand("feedsActPut", { lua: PUT });
  const put = (redis as unknown as { feedsActPut: Script }).feedsActPut.bind(redis);
  const key = (t: string, id: string) => conn.key("act", t, id);
  const hits = processMetrics().cacheRequests.labels({ cache: "activity", result: "hit" });
  const misses = processMetrics().cacheRequests.labels({ cache: "activity", result: "miss" });
  return {
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
    /** Stores each document unless a newer version is cached already. */
    async putMany(docs: ActivityDoc[]): Promise<void> {
      if (!docs.length) return;
      const first = docs[0] as ActivityDoc;
      const ks = docs.map((d) => key(d.tenant_id ?? first.tenant_id, d._id));
      const args = docs.flatMap((d) => [String(d.version), JSON.stringify(freeze(d))]);
      await put(ks.length, ...ks, ...args, String(TTL_SECONDS));
    },
  };
}

export type ActivityCache = ReturnType<typeof createActivityCache>;
