import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import type { Db } from "mongodb";
import { createCountSignal, createInternalAuth, createLocalTransport, createLocks, type Logger, type Nats, type RedisConn, rootKeys } from "@feeds/kit";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { createActivityRepository, type ActivityRepository } from "../src/activity-repository.js";
import { createEntryRepository, type EntryRepository } from "../src/entry-repository.js";
import { createActivityCache } from "../src/activity-cache.js";
import { createFanout } from "../src/fanout.js";
import { createHeads } from "../src/heads.js";
import { createSignals } from "../src/signals.js";
import { createFeedService } from "../src/routes.js";
import { createActivityEvents, createFeedOutbox } from "../src/events.js";

// The feed service as the module wires it (no worker, no relays, no peers), on a test
// namespace's MongoDB, Redis and NATS, served over Connect's in-memory router transport. A test
// may wrap the activity and entry repositories to hold or fail their writes.

export interface LocalFeedService {
  client: Client<typeof FeedService>;
  /** The repositories the service uses (the wrapped ones when wrapped). */
  activities: ActivityRepository;
  entries: EntryRepository;
}

export function localFeedService(
  env: { db: Db; redis: RedisConn; nats: Nats; log: Logger },
  wrap: { activities?: (r: ActivityRepository) => ActivityRepository; entries?: (r: EntryRepository) => EntryRepository } = {},
): LocalFeedService {
  const { db, redis, nats, log } = env;
  const activities = (wrap.activities ?? ((r) => r))(createActivityRepository(db));
  const entries = (wrap.entries ?? ((r) => r))(createEntryRepository(db));
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
  const transport = createLocalTransport((router) => router.service(FeedService, impl), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
  return { client: createClient(FeedService, transport), activities, entries };
}
