import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { connect } from "nats";
import { connectRedis } from "@feeds/kit";
import { dropNamespace as dropParts } from "@feeds/kit/testing";

export interface InfraUrls {
  mongoUrl: string;
  natsUrl: string;
  redisUrl: string;
}

/** A fresh FEEDS_NAMESPACE: runs never see each other's data or work. */
export const newNamespace = (prefix = "t") => `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;

/** Drops everything a namespace left: its database, its streams and its Redis keys. */
export async function dropNamespace(ns: string, urls: InfraUrls): Promise<void> {
  const mongo = new MongoClient(urls.mongoUrl, { serverSelectionTimeoutMS: 3000 });
  const nc = await connect({ servers: urls.natsUrl });
  const redis = await connectRedis({ REDIS_URL: urls.redisUrl, FEEDS_NAMESPACE: ns });
  try {
    await dropParts(ns, { db: mongo.db(ns), redis: redis.redis, jsm: await nc.jetstreamManager() });
  } finally {
    await mongo.close();
    await nc.drain();
    await redis.close();
  }
}
