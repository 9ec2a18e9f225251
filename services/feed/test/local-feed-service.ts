import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import type { Db } from "mongodb";
import { createCountSignal, createInternalAuth, createLocalTransport, createOutbox, type Logger, type Nats, type Outbox, type RedisConn, rootKeys } from "@feeds/kit";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { createActivityRepository, type ActivityRepository } from "../src/activity-repository.js";
import { createEntryRepository, type EntryRepository } from "../src/entry-repository.js";
import { createActivityCache } from "../src/activity-cache.js";
import { createFanout } from "../src/fanout.js";
import { createHeads } from "../src/heads.js";
import { createSignals } from "../src/signals.js";
import { createFeedService } from "../src/routes.js";
import { createActivityEvents } from "../src/events.js";
import { createActivityWrites } from "../src/writes.js";

// The feed service as the module wires it (no worker, no relay started, no peers), on a test
// namespace's MongoDB, Redis and NATS, served over Connect's in-memory router transport. A test
// may wrap the activity and entry repositories to hold or fail their writes, and run the outbox
// relay itself (`outbox.relayOnce()`, with a grace of its choosing).

export interface LocalFeedService {
  client: Client<typeof FeedService>;
  /** The repositories the service uses (the wrapped ones when wrapped). */
  activities: ActivityRepository;
  entries: EntryRepository;
  /** The service's outbox, its activities' collection registered with the service's finish. */
  outbox: Outbox;
}

export function localFeedService(
  env: { db: Db; redis: RedisConn; nats: Nats; log: Logger },
  opts: {
    activities?: (r: ActivityRepository) => ActivityRepository;
    entries?: (r: EntryRepository) => EntryRepository;
    /** The outbox's grace (default kit's). */
    graceMs?: number;
    /** The calling service (default the gateway). */
    caller?: "gateway" | "engagement" | "graph-worker";
  } = {},
): LocalFeedService {
  const { db, redis, nats, log } = env;
  const activities = (opts.activities ?? ((r) => r))(createActivityRepository(db));
  const entries = (opts.entries ?? ((r) => r))(createEntryRepository(db));
  const [signals, heads, cache] = [createSignals(redis), createHeads(redis), createActivityCache(redis)];
  const peers = () => {
    throw new Error("no peer is called: the actor is not a user");
  };
  const events = createActivityEvents({ peers });
  const consoleSignal = createCountSignal(redis, "activities");
  const fanout = createFanout({ nats, activities, entries, signals, heads, cache, peers, events, log });
  const outbox = createOutbox({ db, nats, log, ...(opts.graceMs !== undefined ? { graceMs: opts.graceMs } : {}) });
  const writes = createActivityWrites({ activities, entries, heads, signals, cache, fanout, outbox, nats, consoleSignal });
  outbox.register(activities.collection, writes.finish);
  const impl = createFeedService({
    activities, entries, signals, heads, cache, writes, events, consoleSignal, peers, log,
  });
  const transport = createLocalTransport((router) => router.service(FeedService, impl), log, createInternalAuth(rootKeys(randomBytes(32))), opts.caller ?? "gateway");
  return { client: createClient(FeedService, transport), activities, entries, outbox };
}
