import { randomBytes } from "node:crypto";
import { ensureInfra } from "../../scripts/infra.mjs";
import { testInfraMode } from "../../scripts/lib/containers.mjs";

/**
 * The servers and keys the tests run against: from `npm test`, or ensured here when vitest runs
 * alone (on loopback; under TEST_INFRA=containers only `npm test` starts the shared containers).
 */
export async function testInfra() {
  let mongoUrl = process.env.FEEDS_TEST_MONGO_URL;
  let natsUrl = process.env.FEEDS_TEST_NATS_URL;
  let redisUrl = process.env.FEEDS_TEST_REDIS_URL;
  if (!mongoUrl || !natsUrl || !redisUrl) {
    if (testInfraMode() === "containers") {
      throw new Error("TEST_INFRA=containers: run the tests through `npm test`, which starts the containers and passes their URLs as FEEDS_TEST_*_URL");
    }
    ({ mongoUrl, natsUrl, redisUrl } = await ensureInfra({ log: () => undefined }));
  }
  const env = {
    MONGO_URL: mongoUrl,
    NATS_URL: natsUrl,
    REDIS_URL: redisUrl,
    FEEDS_MASTER_KEY: process.env.FEEDS_MASTER_KEY ?? randomBytes(32).toString("base64"),
    FEEDS_WEBHOOK_KEY: process.env.FEEDS_WEBHOOK_KEY ?? randomBytes(32).toString("base64"),
    FEEDS_INTERNAL_KEY: process.env.FEEDS_INTERNAL_KEY ?? randomBytes(32).toString("base64"),
    BUILD_VERSION: process.env.BUILD_VERSION ?? "test",
  };
  return { mongoUrl, natsUrl, redisUrl, env };
}
