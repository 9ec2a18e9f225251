import { Cluster, Redis } from "ioredis";
import type { Config } from "./config.js";
import { parseRedisUrl } from "./redis-url.js";

export { Cluster, Redis };
/** A single Redis or a Redis Cluster: the commands are the same, keys are placed by slot. */
export type RedisClient = Redis | Cluster;

export interface RedisConn {
  redis: RedisClient;
  /** Namespaced key of a key used alone (no script or multi-key command touches it with another). */
  key(...parts: string[]): string;
  /**
   * Namespaced key with a hash tag, `<namespace>:{<tag>}:<parts>`: a cluster keeps every key of
   * one tag in one slot, so that one script or multi-key command may touch them together. Keys
   * used together carry the same tag, and no script mixes two.
   */
  taggedKey(tag: string, ...parts: string[]): string;
  /** `taggedKey` of a tenant's data: tag `t:<tenant id>`. */
  tenantKey(tenantId: string, ...parts: string[]): string;
  /** Every master (one unless a cluster): what a scan of all keys must visit. */
  masters(): Redis[];
  close(): Promise<void>;
}

const commandOptions = {
  enableOfflineQueue: false,
  // Commands issued in the same event-loop turn (many requests' and tasks' lookups) leave in
  // one socket write: under load a write per command cost more CPU than the commands.
  enableAutoPipelining: true,
} as const;

/** Fails commands at once while Redis is down (no offline queue) and reconnects by itself. */
export async function connectRedis(config: Pick<Config, "REDIS_URL" | "FEEDS_NAMESPACE">): Promise<RedisConn> {
  const target = parseRedisUrl(config.REDIS_URL);
  if ("error" in target) throw new Error(`invalid configuration:\n  REDIS_URL: ${target.error}`);
  const node = { maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: (times: number) => Math.min(100 * times, 1000) };
  const redis: RedisClient =
    target.kind === "single"
      ? new Redis(target.url, { lazyConnect: true, ...commandOptions, ...node })
      : new Cluster(target.nodes, {
          lazyConnect: true,
          ...commandOptions,
          clusterRetryStrategy: (times: number) => Math.min(100 * times, 1000),
          redisOptions: { ...node, ...target.auth, ...(target.tls ? { tls: {} } : {}) },
        });
  // Errors surface on the commands that hit them; an idle disconnect must not crash the process.
  redis.on("error", () => undefined);
  await redis.connect();
  const ns = config.FEEDS_NAMESPACE;
  const taggedKey = (tag: string, ...parts: string[]) => [ns, `{${tag}}`, ...parts].join(":");
  return {
    redis,
    key: (...parts) => [ns, ...parts].join(":"),
    taggedKey,
    tenantKey: (tenantId, ...parts) => taggedKey(`t:${tenantId}`, ...parts),
    masters: () => (redis instanceof Cluster ? redis.nodes("master") : [redis]),
    close: async () => {
      redis.disconnect();
    },
  };
}
