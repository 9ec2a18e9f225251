import { randomUUID } from "node:crypto";
import type { RedisConn } from "@feeds/kit";

// served_count without a database write per read: a first-page read adds one per delivered
// record to a Redis hash of its tenant (one script call), and the tenant's folder turns the hash
// into MongoDB counts in batches, within seconds. To fold, the folder renames the hash to a
// snapshot key (new deliveries start a fresh hash) and journals the snapshot in MongoDB under the
// snapshot's own name before applying it, so a folder that dies anywhere is finished by the next
// one without counting a snapshot twice (see `foldSnapshot` in promoted-repository.ts).

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

// KEYS: hash, snapshots set, tenants set. ARGV: tenant. The tenant leaves the set only when
// nothing of it is left to fold (a delivery racing this re-adds it in the same script as its count).
const SETTLED = `
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('SCARD', KEYS[2]) == 0 then
  redis.call('SREM', KEYS[3], ARGV[1])
  return 1
end
return 0
`;

type Script = (numKeys: number, ...args: string[]) => Promise<unknown>;

export function createServedCounter(conn: RedisConn) {
  const { redis } = conn;
  for (const [name, lua] of [
    ["feedsPromotedCount", COUNT],
    ["feedsPromotedSnapshot", SNAPSHOT],
    ["feedsPromotedSettled", SETTLED],
  ] as const) {
    if (!(name in redis)) redis.defineCommand(name, { lua });
  }
  const script = (name: string) => (redis as unknown as Record<string, Script>)[name]!.bind(redis);
  const [count, snapshot, settled] = [script("feedsPromotedCount"), script("feedsPromotedSnapshot"), script("feedsPromotedSettled")];
  const hash = (t: string) => conn.key("promo", "served", t);
  const snaps = (t: string) => conn.key("promo", "snaps", t);
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

    /** The deliveries of a snapshot: record id → count. */
    async read(snapshotKey: string): Promise<Map<string, number>> {
      const raw = await redis.hgetall(snapshotKey);
      return new Map(Object.entries(raw).map(([id, n]) => [id, Number(n)]));
    },

    /** A snapshot folded into MongoDB: gone from Redis. */
    async drop(tenantId: string, snapshotKey: string): Promise<void> {
      await redis.multi().del(snapshotKey).srem(snaps(tenantId), snapshotKey).exec();
    },

    /** Tenants with deliveries not folded yet (also those of a process that died). */
    pendingTenants: () => redis.smembers(tenants),

    /** Forgets the tenant as pending when nothing of it is left; answers whether it did. */
    async settle(tenantId: string): Promise<boolean> {
      return (await settled(3, hash(tenantId), snaps(tenantId), tenants, tenantId)) === 1;
    },
  };
}

export type ServedCounter = ReturnType<typeof createServedCounter>;
