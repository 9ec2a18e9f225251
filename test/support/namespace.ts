import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { Redis } from "ioredis";
import { connect } from "nats";
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
  const redis = new Redis(urls.redisUrl);
  try {
    await dropParts(ns, { db: mongo.db(ns), redis, jsm: await nc.jetstreamManager() });
  } finally {
    await mongo.close();
    await nc.drain();
    redis.disconnect();
  }
}
