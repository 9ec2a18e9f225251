import { randomUUID } from "node:crypto";
import { redisScript, type RedisConn } from "@feeds/kit";

// Open streams per principal, across every gateway replica (docs/stream.md): a sorted set per
// end user (or per tenant for server tokens) of the open streams, each scored by when its lease
// ends. A stream renews its lease on every heartbeat and removes itself when it ends; a gateway
// that died leaves leases that lapse within LEASE_MS.

export const LEASE_MS = 60_000;

// KEYS: the set; ARGV: now, lease end, limit, member, key ttl (ms).
const TAKE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`;

export interface Slot {
  renew(): Promise<void>;
  release(): Promise<void>;
}

export function createStreamSlots(redis: RedisConn) {
  const take = redisScript<number>(redis.redis, TAKE);
  return {
    /** A slot of `principal` (`user:<id>` or `server`) in the tenant, or null when `limit` are open. */
    async take(tenantId: string, principal: string, limit: number): Promise<Slot | null> {
      const key = redis.tenantKey(tenantId, "streams", principal);
      const member = randomUUID();
      const now = Date.now();
      if ((await take(1, key, String(now), String(now + LEASE_MS), String(limit), member, String(LEASE_MS * 2))) !== 1) return null;
      return {
        async renew() {
          const at = Date.now();
          await redis.redis.zadd(key, "XX", String(at + LEASE_MS), member);
          await redis.redis.pexpire(key, LEASE_MS * 2);
        },
        async release() {
          await redis.redis.zrem(key, member);
        },
      };
    },
  };
}

export type StreamSlots = ReturnType<typeof createStreamSlots>;
