import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connectNats,
  connectRedis,
  createCountSignal,
  createInternalAuth,
  createLocalTransport,
  createLocks,
  createLogger,
  ensureQueue,
  scope,
  type Nats,
  type RedisConn,
} from "@feeds/kit";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { createActivityRepository } from "../src/activity-repository.js";
import { createEntryRepository } from "../src/entry-repository.js";
import { createActivityCache } from "../src/activity-cache.js";
import { createFanout } from "../src/fanout.js";
import { createHeads } from "../src/heads.js";
import { createSignals } from "../src/signals.js";
import { createFeedService } from "../src/routes.js";
import { createActivityEvents, createFeedOutbox } from "../src/events.js";

// The feed's change signal is answered from Redis alone once the feed's head is warm: the
// service's MongoDB client monitors its commands, and a warm signal call issues none.

const urls = {
  mongo: process.env.FEEDS_TEST_MONGO_URL ?? "mongodb://127.0.0.1:27017/",
  redis: process.env.FEEDS_TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
  nats: process.env.FEEDS_TEST_NATS_URL ?? "nats://127.0.0.1:4222",
};
const namespace = `feed_signal_${randomBytes(4).toString("hex")}`;
const log = createLogger({ LOG_LEVEL: "silent" }, "test");

describe("feed signal", () => {
  const mongo = new MongoClient(urls.mongo, { serverSelectionTimeoutMS: 5_000, monitorCommands: true });
  const commands: string[] = [];
  mongo.on("commandStarted", (e) => commands.push(e.commandName));
  let db: Db;
  let redis: RedisConn;
  let nats: Nats;
  let client: Client<typeof FeedService>;
  const call = scope({ tenantId: "t1", caller: { kind: "server" } });

  beforeAll(async () => {
    await mongo.connect();
    db = mongo.db(namespace);
    redis = await connectRedis({ REDIS_URL: urls.redis, FEEDS_NAMESPACE: namespace });
    nats = await connectNats({ NATS_URL: urls.nats, FEEDS_NAMESPACE: namespace }, "signal-test");
    await ensureQueue(nats, "fanout");
    const activities = createActivityRepository(db);
    const entries = createEntryRepository(db);
    const [signals, heads, cache] = [createSignals(redis), createHeads(redis), createActivityCache(redis)];
    const peers = () => {
      throw new Error("no peer is called: the actor is not a user");
    };
    const events = createActivityEvents({ peers });
    const outbox = createFeedOutbox({ db, nats, log, activities });
    const fanout = createFanout({ nats, activities, entries, signals, heads, cache, peers, events, log });
    const impl = createFeedService({
      activities, entries, signals, heads, cache, fanout, locks: createLocks(db, "activity_locks"), outbox, events, consoleSignal: createCountSignal(redis, "activities"), peers, log,
    });
    client = createClient(FeedService, createLocalTransport((router) => router.service(FeedService, impl), log, createInternalAuth(randomBytes(32))));
  });

  afterAll(async () => {
    await db?.dropDatabase();
    await mongo.close();
    if (redis) {
      const keys = await redis.redis.keys(`${namespace}:*`);
      if (keys.length) await redis.redis.del(...keys);
      await redis.close();
    }
    if (nats) {
      for await (const s of nats.jsm.streams.list()) {
        if (s.config.name.startsWith(`${namespace}_`)) await nats.jsm.streams.delete(s.config.name);
      }
      await nats.close();
    }
  });

  const add = (feed: string, object: string) =>
    client.addActivity({ feed: { group: "user", id: feed }, activity: { actor: "system:x", verb: "post", object, customJson: "{}", refs: [] } }, call);
  const signal = (feed: string) => client.getSignal({ feed: { group: "user", id: feed } }, call);

  it("answers a warm feed's version and newest entry without a database command", async () => {
    const first = (await add("a", "o:1")).activity!;
    await signal("a"); // the write made a partial head: the first signal merges it once
    commands.length = 0;
    const warm = await signal("a");
    expect(warm.head).toBe(first.id);
    const second = (await add("a", "o:2")).activity!;
    commands.length = 0;
    const after = await signal("a");
    expect(after.head).toBe(second.id);
    expect(after.version).toBeGreaterThan(warm.version);
    expect(commands).toEqual([]);
  });

  it("answers an empty feed from Redis after one rebuild", async () => {
    expect((await signal("empty")).head).toBe("");
    commands.length = 0;
    expect((await signal("empty")).head).toBe("");
    expect(commands).toEqual([]);
  });
});
