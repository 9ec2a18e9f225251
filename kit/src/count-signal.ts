import type { RedisConn } from "./redis.js";
import { redisScript } from "./redis-script.js";

// A change signal with a count, per tenant, in Redis, for the console's live tables (activities,
// users, webhook event records): reading it queries nothing while the hash lives. `count` moves
// only while present (a missing one is counted from MongoDB once, so a lost increment heals within
// the key's lifetime); `version` moves on every change. A hint for a console, never worth failing
// a write over: bumps are best effort.

const TTL_SECONDS = 3600;
const BUMP = `
if redis.call('HEXISTS', KEYS[1], 'count') == 1 then redis.call('HINCRBY', KEYS[1], 'count', ARGV[1]) end
if redis.call('HEXISTS', KEYS[1], 'version') == 1 then redis.call('HINCRBY', KEYS[1], 'version', 1)
else redis.call('HSET', KEYS[1], 'version', ARGV[2]) end
return 1
`;

export interface CountSignal {
  /** After a write: `added` rows more (0: a change of rows that exist). Best effort. */
  bump(tenantId: string, added: number): Promise<void>;
  /** The count and version; `count` runs (MongoDB) only when Redis lost them. */
  read(tenantId: string, count: () => Promise<number>): Promise<{ count: number; version: number }>;
}

export function createCountSignal(conn: RedisConn, name: "activities" | "users" | "webhook_events"): CountSignal {
  const key = (tenantId: string) => conn.tenantKey(tenantId, "cs", name);
  // Runs by its SHA (EVALSHA), not by sending the script's text with each bump.
  const bump = redisScript(conn.redis, BUMP);
  return {
    async bump(tenantId, added) {
      await bump(1, key(tenantId), String(added), String(Date.now())).catch(() => undefined);
    },
    async read(tenantId, count) {
      const k = key(tenantId);
      let [n, version] = await conn.redis.hmget(k, "count", "version");
      if (n === null || version === null) {
        const counted = await count();
        await conn.redis.multi().hsetnx(k, "count", String(counted)).hsetnx(k, "version", String(Date.now())).expire(k, TTL_SECONDS).exec();
        [n, version] = await conn.redis.hmget(k, "count", "version");
      }
      return { count: Number(n ?? 0), version: Number(version ?? 0) };
    },
  };
}
