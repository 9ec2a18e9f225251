import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { Redis } from "ioredis";
import { connect } from "nats";

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
  try {
    await mongo.db(ns).dropDatabase();
  } finally {
    await mongo.close();
  }
  const nc = await connect({ servers: urls.natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    for await (const s of jsm.streams.list()) {
      if (s.config.name.startsWith(`${ns}_`)) await jsm.streams.delete(s.config.name);
    }
  } finally {
    await nc.drain();
  }
  const redis = new Redis(urls.redisUrl);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${ns}:*`, "COUNT", 500);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
