import { Redis } from "ioredis";
import type { Config } from "./config.js";

export type { Redis };

export interface RedisConn {
  redis: Redis;
  /** Namespaced key: every key of this system starts with `<namespace>:`. */
  key(...parts: string[]): string;
  close(): Promise<void>;
}

/** Fails commands at once while Redis is down (no offline queue) and reconnects by itself. */
export async function connectRedis(config: Pick<Config, "REDIS_URL" | "FEEDS_NAMESPACE">): Promise<RedisConn> {
  const redis = new Redis(config.REDIS_URL, {
    lazyConnect: true,
    enableOfflineQueue: false,
    // Commands issued in the same event-loop turn (many requests' and tasks' lookups) leave in
    // one socket write: under load a write per command cost more CPU than the commands.
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(100 * times, 1000),
  });
  // Errors surface on the commands that hit them; an idle disconnect must not crash the process.
  redis.on("error", () => undefined);
  await redis.connect();
  const ns = config.FEEDS_NAMESPACE;
  return {
    redis,
    key: (...parts) => [ns, ...parts].join(":"),
    close: async () => {
      redis.disconnect();
    },
  };
}
