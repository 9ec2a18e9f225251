import { randomBytes } from "node:crypto";

/** The servers and keys the tests run against: from `npm test`, or ensured here when vitest runs alone. */
export async function testInfra() {
  let mongoUrl = process.env.FEEDS_TEST_MONGO_URL;
  let natsUrl = process.env.FEEDS_TEST_NATS_URL;
  let redisUrl = process.env.FEEDS_TEST_REDIS_URL;
  if (!mongoUrl || !natsUrl || !redisUrl) {
    // @ts-expect-error plain ESM script without types
    const { ensureInfra } = (await import("../../scripts/infra.mjs")) as {
      ensureInfra: (o: { root: string; log: (...a: unknown[]) => void }) => Promise<{ mongoUrl: string; natsUrl: string; redisUrl: string }>;
    };
    const urls = await ensureInfra({ root: new URL("../..", import.meta.url).pathname, log: () => undefined });
    ({ mongoUrl, natsUrl, redisUrl } = urls);
  }
  const env = {
    MONGO_URL: mongoUrl,
    NATS_URL: natsUrl,
    REDIS_URL: redisUrl,
    FEEDS_MASTER_KEY: process.env.FEEDS_MASTER_KEY ?? randomBytes(32).toString("base64"),
    BUILD_VERSION: process.env.BUILD_VERSION ?? "test",
  };
  return { mongoUrl, natsUrl, redisUrl, env };
}
