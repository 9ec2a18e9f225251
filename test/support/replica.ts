import { inject } from "vitest";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";

/**
 * A second replica of every process of the shared system (gateway, engagement, feed, ...): the
 * same servers, namespace and at-rest keys, so that either replica reads what the other wrote.
 */
export function startReplica(): Promise<RunningSystem> {
  return startSystem({
    env: {
      MONGO_URL: inject("mongoUrl"),
      NATS_URL: inject("natsUrl"),
      REDIS_URL: inject("redisUrl"),
      FEEDS_NAMESPACE: inject("namespace"),
      FEEDS_MASTER_KEY: inject("masterKey"),
      FEEDS_WEBHOOK_KEY: inject("webhookKey"),
      BUILD_VERSION: inject("buildVersion"),
      TRUST_PROXY: "1",
      LOG_LEVEL: "warn",
    },
  });
}
