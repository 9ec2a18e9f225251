import { randomUUID } from "node:crypto";
import type { RedisConn } from "@feeds/kit";

// served_count without a database write per read: a first-page read adds one per delivered
// record to a Redis hash of its tenant (one script call), and folders turn the hash into MongoDB
// counts, within seconds. To fold, a folder renames the hash to a snapshot key (new deliveries
// start a fresh hash), applies the snapshot as once-only increments of the records (each record
// remembers the snapshot's id), and only then deletes the snapshot; a folder that dies anywhere
// is finished by the next one without counting twice (see `fold` in promoted-repository.ts).
// A deleted snapshot's id is remembered in `folded` until the records may forget it.

// KEYS: hash, tenants set. ARGV: tenant, ids...
const COUNT = `
for i = 2, #ARGV do redis.call('HINCRBY', KEYS[1], ARGV[i], 1) end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`;

// KEYS: hash, snapshots set. ARGV: new snapshot key. Answers every snapshot waiting to be folded.
const SNAPSHOT = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], ARGV[1])
  redis.call('SADD', KEYS[2], ARGV[1])
end
return redis.call('SMEMBERS', KEYS[2])
`;

// KEYS: snapshot, snapshots set, folded (sorted set). ARGV: snapshot key, now (ms). The snapshot
// goes; its key is remembered as folded at `now` (once: a second folder's drop changes nothing).
const DROP = `
redis.call('DEL', KEYS[1])
if redis.call('SREM', KEYS[2], ARGV[1]) == 1 then redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1]) end
return 1
`;

// KEYS: hash, snapshots set, folded, tenants set. ARGV: tenant. The tenant leaves the set only
// when nothing of it is left to fold or forget (a delivery racing this re-adds it in the same
// script as its count).
const SETTLED = `
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('SCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('SREM', KEYS[4], ARGV[1])
  return 1
end
return 0
`;

type Script = (numKeys: number, ...args: string[]) => Promise<unknown>;

/** The id a snapshot's increments are remembered by in the records it counted. */
export const snapshotIdOf = (snapshotKey: string) => snapshotKey.slice(snapshotKey.lastIndexOf(":") + 1);

export function createServedCounter(conn: RedisConn) {
  const { redis } = conn;
  for (const [name, lua] of [
    ["feedsPromotedCount", COUNT],
    ["feedsPromotedSnapshot", SNAPSHOT],
    ["feedsPromotedDrop", DROP],
    ["feedsPromotedSettled", SETTLED],
  ] as const) {
    if (!(name in redis)) redis.defineCommand(name, { lua });
  }
  const script = (name: string) => (redis as unknown as Record<string, Script>)[name]!.bind(redis);
  const [count, snapshot, drop, settled] = [
    script("feedsPromotedCount"),
    script("feedsPromotedSnapshot"),
    script("feedsPromotedDrop"),
    script("feedsPromotedSettled"),
  ];
  const hash = (t: string) => conn.key("promo", "served", t);
  const snaps = (t: string) => conn.key("promo", "snaps", t);
  const folded = (t: string) => conn.key("promo", "folded", t);
  const tenants = conn.key("promo", "tenants");

  return {
    /** One delivery of each of `ids` (one round trip; the read fails if Redis does). */
    async count(tenantId: string, ids: string[]): Promise<void> {
      if (ids.length) await count(2, hash(tenantId), tenants, tenantId, ...ids);
    },

    /** Moves the tenant's deliveries so far into a snapshot; answers every snapshot to fold. */
    async snapshots(tenantId: string): Promise<string[]> {
      return (await snapshot(2, hash(tenantId), snaps(tenantId), conn.key("promo", "snap", tenantId, randomUUID()))) as string[];
    },

    /** The deliveries of a snapshot: record id → count (empty once it is dropped). */
    async read(snapshotKey: string): Promise<Map<string, number>> {
      const raw = await redis.hgetall(snapshotKey);
      return new Map(Object.entries(raw).map(([id, n]) => [id, Number(n)]));
    },

    /** A snapshot applied to MongoDB: gone from Redis, remembered as folded now. */
    async drop(tenantId: string, snapshotKey: string): Promise<void> {
      await drop(3, snapshotKey, snaps(tenantId), folded(tenantId), snapshotKey, String(Date.now()));
    },

    /** Snapshots dropped at or before `before` (epoch ms), oldest first. */
    foldedBefore: (tenantId: string, before: number, limit = 100): Promise<string[]> =>
      redis.zrangebyscore(folded(tenantId), "-inf", before, "LIMIT", 0, limit),

    /** Snapshots the records have forgotten. */
    async forget(tenantId: string, snapshotKeys: string[]): Promise<void> {
      if (snapshotKeys.length) await redis.zrem(folded(tenantId), ...snapshotKeys);
    },

    /** Tenants with deliveries not folded (or snapshots not forgotten) yet, also those of a process that died. */
    pendingTenants: () => redis.smembers(tenants),

    /** Forgets the tenant as pending when nothing of it is left; answers whether it did. */
    async settle(tenantId: string): Promise<boolean> {
      return (await settled(4, hash(tenantId), snaps(tenantId), folded(tenantId), tenants, tenantId)) === 1;
    },
  };
}

export type ServedCounter = ReturnType<typeof createServedCounter>;
