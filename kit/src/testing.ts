import { randomBytes } from "node:crypto";
import { Cluster, type Redis } from "ioredis";
import { MongoClient, type CommandStartedEvent, type Db } from "mongodb";
import type { JetStreamManager } from "nats";
import { configFields, type Config } from "./config.js";
import { createLogger, type Logger } from "./log.js";
import { connectNats, ensureQueue, type Nats, type QueueName } from "./nats.js";
import { ensureLiveStream } from "./live.js";
import { connectRedis, type RedisClient, type RedisConn } from "./redis.js";

// Test support (`@feeds/kit/testing`): a namespace of a test's own on the real MongoDB-wire
// storage, Redis and NATS JetStream (FEEDS_TEST_*_URL, default the local ones), and the teardown
// that removes everything the namespace made, so that runs never see each other.

/** The parts a test asks for: each is connected by `open()` and removed by `close()`. */
export interface TestEnvParts {
  /** The namespace's database; `onCommand` sees every command the client starts. */
  db?: true | { onCommand: (e: CommandStartedEvent) => void };
  /** Keys under `<namespace>:`. */
  redis?: true;
  /** Streams named `<namespace>_…`; `queues` are made, with their dead-letter streams, on open. */
  nats?: true | { queues: QueueName[] };
}

interface Opened {
  db: Db;
  redis: RedisConn;
  nats: Nats;
}

export type TestEnv<P extends TestEnvParts> = {
  readonly namespace: string;
  /** The servers and the namespace: for a second connection a test makes itself. */
  readonly config: Pick<Config, "MONGO_URL" | "REDIS_URL" | "NATS_URL" | "FEEDS_NAMESPACE">;
  /** Silent unless TEST_LOG_LEVEL says otherwise. */
  readonly log: Logger;
  /** Connects the parts asked for (in beforeAll). */
  readonly open: () => Promise<void>;
  /** Drops the database, deletes the Redis keys and the streams (their consumers with them), and
   * closes the connections; every step runs whichever failed before it (in afterAll). */
  readonly close: () => Promise<void>;
} & { readonly [K in keyof P & keyof Opened]: Opened[K] };

/**
 * Removes what `namespace` left in the parts given: drops its database, deletes its Redis keys
 * (`<namespace>:…`, on every master of a cluster) and its streams (`<namespace>_…`, their
 * consumers with them). Every step runs whichever failed before it; the failures are thrown
 * together at the end.
 */
export async function dropNamespace(namespace: string, parts: { db?: Db; redis?: RedisClient; jsm?: JetStreamManager }): Promise<void> {
  const failures: unknown[] = [];
  const step = (fn: () => Promise<unknown>) => fn().catch((e: unknown) => void failures.push(e));
  const { db, redis, jsm } = parts;
  if (db) await step(() => db.dropDatabase());
  if (redis) {
    // A cluster's keys are spread over its masters, and a SCAN sees one server's only.
    const masters = redis instanceof Cluster ? redis.nodes("master") : [redis];
    for (const master of masters) await step(() => dropKeys(master, `${namespace}:*`));
  }
  if (jsm) {
    await step(async () => {
      for await (const s of jsm.streams.list()) {
        if (s.config.name.startsWith(`${namespace}_`)) await jsm.streams.delete(s.config.name);
      }
    });
  }
  if (failures.length) throw new AggregateError(failures, `namespace ${namespace}: teardown failed`);
}

/** Deletes the keys of one server that match `pattern` (one DEL per key: in a cluster, a DEL of
 * several keys must name keys of one slot). */
async function dropKeys(server: Redis, pattern: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await server.scan(cursor, "MATCH", pattern, "COUNT", 500);
    cursor = next;
    if (keys.length) await server.pipeline(keys.map((k) => ["del", k])).exec();
  } while (cursor !== "0");
}

/** A namespace `<prefix>_<random>` with the parts asked for, readable once `open()` has run. */
export function createTestEnv<P extends TestEnvParts>(prefix: string, parts: P): TestEnv<P> {
  const namespace = `${prefix}_${randomBytes(4).toString("hex")}`;
  const { LOG_LEVEL, ...config } = configFields
    .pick({ MONGO_URL: true, REDIS_URL: true, NATS_URL: true, FEEDS_NAMESPACE: true, LOG_LEVEL: true })
    .parse({
      MONGO_URL: process.env.FEEDS_TEST_MONGO_URL,
      REDIS_URL: process.env.FEEDS_TEST_REDIS_URL,
      NATS_URL: process.env.FEEDS_TEST_NATS_URL,
      FEEDS_NAMESPACE: namespace,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    });
  const onCommand = typeof parts.db === "object" ? parts.db.onCommand : undefined;
  const mongo = parts.db
    ? new MongoClient(config.MONGO_URL, { serverSelectionTimeoutMS: 5_000, ...(onCommand ? { monitorCommands: true } : {}) })
    : undefined;
  if (onCommand) mongo?.on("commandStarted", onCommand);
  const opened: Partial<Opened> = {};

  async function open() {
    if (mongo) {
      await mongo.connect();
      opened.db = mongo.db(namespace);
    }
    if (parts.redis) opened.redis = await connectRedis(config);
    if (parts.nats) {
      const nats = (opened.nats = await connectNats(config, prefix));
      for (const q of typeof parts.nats === "object" ? parts.nats.queues : []) await ensureQueue(nats, q);
      // Every producer of activities and notifications publishes live events (live.ts).
      await ensureLiveStream(nats);
    }
  }

  async function close() {
    const failures: unknown[] = [];
    const step = (fn: () => Promise<unknown>) => fn().catch((e: unknown) => void failures.push(e));
    const { db, redis, nats } = opened;
    await step(() => dropNamespace(namespace, { ...(db ? { db } : {}), ...(redis ? { redis: redis.redis } : {}), ...(nats ? { jsm: nats.jsm } : {}) }));
    if (mongo) await step(() => mongo.close());
    if (redis) await step(() => redis.close());
    if (nats) await step(() => nats.close());
    if (failures.length) throw new AggregateError(failures, `test namespace ${namespace}: teardown failed`);
  }

  function part<K extends keyof Opened>(name: K): Opened[K] {
    const p = opened[name];
    if (!p) throw new Error(`test namespace ${namespace}: ${name} is not open (ask for it, and await open() first)`);
    return p;
  }

  // Every part has its getter; the type shows the test only those it asked for.
  const env: TestEnv<Required<TestEnvParts>> = {
    namespace,
    config,
    log: createLogger({ LOG_LEVEL }, "test"),
    open,
    close,
    get db() {
      return part("db");
    },
    get redis() {
      return part("redis");
    },
    get nats() {
      return part("nats");
    },
  };
  return env;
}
