import { randomUUID } from "node:crypto";
import { redisScript, type RedisConn } from "@feeds/kit";

// served_count without a database write per read: a first-page read adds one per delivered
// record to a Redis hash of its tenant (one script call), and folders turn the hash into MongoDB
// counts, within seconds. To fold, a folder renames the hash to a snapshot key (new deliveries
// start a fresh hash), applies the snapshot as once-only increments of the records (each record
// remembers the snapshot's id), and only then deletes the snapshot; a folder that dies anywhere
// is finished by the next one without counting twice (see `fold` in promoted-repository.ts).
// A deleted snapshot's id is remembered in `folded` until the records may forget it.
// A tenant's keys share its hash tag (one script touches several); the set of tenants with
// something pending is no tenant's, and is written beside the scripts, in an order that never
// leaves a tenant with deliveries out of it once both writes are done (see `count` and `settle`).

// KEYS: hash. ARGV: ids...
const COUNT = `
for i = 1, #ARGV do redis.call('HINCRBY', KEYS[1], ARGV[i], 1) end
return 1
`;

// KEYS: hash, snapshots set, new snapshot. Answers every snapshot waiting to be folded.
const SNAPSHOT = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[3])
  redis.call('SADD', KEYS[2], KEYS[3])
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

// KEYS: hash, snapshots set, folded. Whether nothing of the tenant is left to fold or forget.
const SETTLED = `
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('SCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  return 1
end
return 0
`;

/** The id a snapshot's increments are remembered by in the records it counted. */
export const snapshotIdOf = (snapshotKey: string) => snapshotKey.slice(snapshotKey.lastIndexOf(":") + 1);

export function createServedCounter(conn: RedisConn) {
  const { redis } = conn;
  const count = redisScript(redis, COUNT);
  const snapshot = redisScript(redis, SNAPSHOT);
  const drop = redisScript(redis, DROP);
  const settled = redisScript(redis, SETTLED);
  const hash = (t: string) => conn.tenantKey(t, "promo", "served");
  const snaps = (t: string) => conn.tenantKey(t, "promo", "snaps");
  const folded = (t: string) => conn.tenantKey(t, "promo", "folded");
  const tenants = conn.key("promo", "tenants");

  return {
    /**
     * One delivery of each of `ids` (the read fails if Redis does), then the tenant marked
     * pending: after its count, so that a settle that removed the mark before it either saw the
     * count or is followed by this mark.
     */
    async count(tenantId: string, ids: string[]): Promise<void> {
      if (!ids.length) return;
      await count(1, hash(tenantId), ...ids);
      await redis.sadd(tenants, tenantId);
    },

    /** Moves the tenant's deliveries so far into a snapshot; answers every snapshot to fold. */
    async snapshots(tenantId: string): Promise<string[]> {
      return (await snapshot(3, hash(tenantId), snaps(tenantId), conn.tenantKey(tenantId, "promo", "snap", randomUUID()))) as string[];
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

    /**
     * Forgets the tenant as pending when nothing of it is left; answers whether it did. The mark
     * goes first and comes back when something is left: a count whose mark this removed counted
     * before the check, which sees it (or its fold) and marks the tenant again.
     */
    async settle(tenantId: string): Promise<boolean> {
      await redis.srem(tenants, tenantId);
      let empty = false;
      try {
        empty = (await settled(3, hash(tenantId), snaps(tenantId), folded(tenantId))) === 1;
      } finally {
        if (!empty) await redis.sadd(tenants, tenantId);
      }
      return empty;
    },
  };
}

export type ServedCounter = ReturnType<typeof createServedCounter>;
