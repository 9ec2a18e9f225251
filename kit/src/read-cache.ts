import { processMetrics } from "./metrics.js";
import type { RedisConn } from "./redis.js";
import { redisScript } from "./redis-script.js";

// A read-through cache of records by id in Redis, for the hot path of feed reads (actor users,
// objects). MongoDB stays the source of truth and no answer depends on the cache:
// - a reader remembers each key's generation before it reads MongoDB, and stores what it read
//   only while the generation is unchanged (one Lua call), so a write that lands between the
//   reader's database read and its fill keeps the old value out;
// - a writer, after its database write, bumps the generation and deletes the value;
// - Redis failing on a read falls back to MongoDB; failing on a fill is ignored.
// What is left: a writer that dies between its database write and the bump leaves the old value
// for at most the TTL.

const FILL = `
local ttl = tonumber(ARGV[1])
local n = #KEYS / 2
for i = 1, n do
  local seen = ARGV[1 + i]
  local gen = redis.call('GET', KEYS[n + i]) or ''
  if gen == seen then
    redis.call('SET', KEYS[i], ARGV[1 + n + i], 'EX', ttl, 'NX')
  end
end
return 1
`;

/** One id's cached state (`ReadCache.lookup`). */
export type Lookup<T> =
  /** Cached: its record, or undefined when it is cached as absent. */
  | { hit: true; value: T | undefined }
  /** Not cached: `fill` stores what the caller reads after this lookup (undefined: absent), under
   * the same generation check as `read`'s fill; it never throws. */
  | { hit: false; fill(value: T | undefined): Promise<void> };

export interface ReadCache<T> {
  /**
   * The records of `ids` (absent ones missing from the map): cached ones from Redis, the rest
   * from `load`, which then fills the cache. Ids that `load` does not answer are cached as absent.
   */
  read(tenantId: string, ids: string[], load: (ids: string[]) => Promise<Map<string, T>>): Promise<Map<string, T>>;
  /**
   * One id without a loader, for a caller that reads the database its own way (a stream): its
   * cached state, or a miss with the fill to call once the caller has read it all. Redis failing
   * answers a miss whose fill does nothing.
   */
  lookup(tenantId: string, id: string): Promise<Lookup<T>>;
  /** After a write of these ids: readers see the database again. Throws when Redis fails. */
  invalidate(tenantId: string, ids: string[]): Promise<void>;
}

/** Generations outlive any read by far; a generation that expires reads as a change. */
const GEN_TTL_SECONDS = 86_400;

/** The codec of a record whose `fields` are Dates: cached as epoch milliseconds. */
export function dateFieldsCodec<T extends object>(...fields: (keyof T & string)[]) {
  return {
    encode(v: T): unknown {
      const o: Record<string, unknown> = { ...(v as Record<string, unknown>) };
      for (const f of fields) o[f] = (v[f] as Date).getTime();
      return o;
    },
    decode(raw: unknown): T {
      const o: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
      for (const f of fields) o[f] = new Date(o[f] as number);
      return o as T;
    },
  };
}

export function createReadCache<T>(
  conn: RedisConn,
  name: string,
  codec: { encode(v: T): unknown; decode(v: unknown): T },
  opts: { ttlSeconds: number },
): ReadCache<T> {
  const { redis } = conn;
  const fill = redisScript(redis, FILL);
  // A tenant's values and generations share its hash tag: one fill script, MGET or invalidation
  // touches several of them (in a cluster, keys of one slot only).
  const valueKey = (t: string, id: string) => conn.tenantKey(t, "rc", name, id);
  const genKey = (t: string, id: string) => conn.tenantKey(t, "rcg", name, id);
  const hits = processMetrics().cacheRequests.labels({ cache: name, result: "hit" });
  const misses = processMetrics().cacheRequests.labels({ cache: name, result: "miss" });

  /** A cached entry's record; undefined when it is cached as absent. */
  const decodeEntry = (raw: string): T | undefined => {
    const entry = JSON.parse(raw) as { v?: unknown };
    return "v" in entry ? codec.decode(entry.v) : undefined;
  };

  /** Stores each value (undefined: absent) while its generation is still the one seen before the
   * database read; a Redis failure is ignored (the next reader reads the database). */
  async function store(tenantId: string, fills: { id: string; seen: string; value: T | undefined }[]): Promise<void> {
    const keys = fills.map((f) => valueKey(tenantId, f.id));
    const genKeys = fills.map((f) => genKey(tenantId, f.id));
    const values = fills.map((f) => JSON.stringify(f.value === undefined ? {} : { v: codec.encode(f.value) }));
    await fill(keys.length * 2, ...keys, ...genKeys, String(opts.ttlSeconds), ...fills.map((f) => f.seen), ...values).catch(() => undefined);
  }

  return {
    async read(tenantId, ids, load) {
      const unique = [...new Set(ids)];
      if (unique.length === 0) return new Map();
      let cached: (string | null)[];
      let gens: (string | null)[];
      try {
        // One MGET of the values and their generations (one tenant's keys: one hash slot);
        // auto-pipelining (kit's connection) writes it with the other requests' commands of
        // that tick in one socket write.
        const both = await redis.mget(...unique.map((id) => valueKey(tenantId, id)), ...unique.map((id) => genKey(tenantId, id)));
        cached = both.slice(0, unique.length);
        gens = both.slice(unique.length);
      } catch {
        misses.inc(unique.length);
        return load(unique);
      }
      const out = new Map<string, T>();
      const missing: number[] = [];
      unique.forEach((id, i) => {
        const raw = cached[i];
        if (raw === null || raw === undefined) {
          missing.push(i);
          return;
        }
        const v = decodeEntry(raw);
        if (v !== undefined) out.set(id, v);
      });
      hits.inc(unique.length - missing.length);
      misses.inc(missing.length);
      if (missing.length === 0) return out;
      const loaded = await load(missing.map((i) => unique[i] as string));
      const fills = missing.map((i) => {
        const id = unique[i] as string;
        const v = loaded.get(id);
        if (v !== undefined) out.set(id, v);
        return { id, seen: gens[i] ?? "", value: v };
      });
      await store(tenantId, fills);
      return out;
    },

    async lookup(tenantId, id) {
      let raw: string | null;
      let gen: string | null;
      try {
        [raw = null, gen = null] = await redis.mget(valueKey(tenantId, id), genKey(tenantId, id));
      } catch {
        misses.inc();
        return { hit: false, fill: async () => undefined };
      }
      if (raw === null) {
        misses.inc();
        return { hit: false, fill: (value) => store(tenantId, [{ id, seen: gen ?? "", value }]) };
      }
      hits.inc();
      return { hit: true, value: decodeEntry(raw) };
    },

    async invalidate(tenantId, ids) {
      const unique = [...new Set(ids)];
      if (unique.length === 0) return;
      const p = redis.pipeline();
      for (const id of unique) {
        p.incr(genKey(tenantId, id)).expire(genKey(tenantId, id), GEN_TTL_SECONDS);
      }
      p.del(...unique.map((id) => valueKey(tenantId, id)));
      const res = await p.exec();
      const failed = res?.find(([e]) => e);
      if (!res || failed) throw failed?.[0] ?? new Error("cache invalidation got no answer");
    },
  };
}
