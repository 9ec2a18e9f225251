import type { Db } from "mongodb";
import { createCountSignal, createOutbox, createWorkerBeats, ensureLiveStream, ensureQueue, watchedFeeds, type Clients, type Logger, type Nats, type RedisConn, type ServiceModule } from "@feeds/kit";
import { FeedService, PromotedService } from "@feeds/proto/feeds/feed/v1/feed";
import { createPromotedModule } from "./promoted-routes.js";
import { createActivityRepository, withConsoleSignal } from "./activity-repository.js";
import { createEntryRepository } from "./entry-repository.js";
import { createFanout } from "./fanout.js";
import { createFanoutLag } from "./fanout-lag.js";
import { createFeedService } from "./routes.js";
import { createSignals } from "./signals.js";
import { createHeads } from "./heads.js";
import { createActivityCache } from "./activity-cache.js";
import { createActivityEvents } from "./events.js";
import { createActivityWrites } from "./writes.js";

/** The feed service: activities, feed entries, change signals, the fan-out worker and the outbox relay. */
export async function createFeedModule(deps: {
  db: Db;
  nats: Nats;
  redis: RedisConn;
  peers: () => Pick<Clients, "graph" | "users">;
  log: Logger;
  /** Run the fan-out worker and outbox relay in this process (default true). */
  worker?: boolean;
}): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "fanout");
  await ensureLiveStream(deps.nats);
  const consoleSignal = createCountSignal(deps.redis, "activities");
  const activities = withConsoleSignal(createActivityRepository(deps.db), consoleSignal);
  const entries = createEntryRepository(deps.db);
  const signals = createSignals(deps.redis);
  const heads = createHeads(deps.redis);
  const cache = createActivityCache(deps.redis);
  const events = createActivityEvents({ peers: deps.peers });
  const beats = createWorkerBeats(deps.redis);
  // Live events of a feed go out while a stream watches it (docs/stream.md).
  const liveFeeds = (tenantId: string, feeds: string[]) => watchedFeeds(deps.redis, tenantId, feeds);
  const fanout = createFanout({ nats: deps.nats, activities, entries, signals, heads, cache, peers: deps.peers, events, log: deps.log, beats, lag: createFanoutLag(deps.redis, deps.log), liveFeeds });
  // Activities carry their pending changes (the add's fan-out task, a patch's or delete's event).
  const outbox = createOutbox({ db: deps.db, nats: deps.nats, log: deps.log });
  const writes = createActivityWrites({ activities, entries, heads, signals, cache, fanout, outbox, nats: deps.nats, consoleSignal, liveFeeds });
  outbox.register(activities.collection, writes.finish);
  await Promise.all([activities.ensureIndexes(), entries.ensureIndexes(), outbox.ensureIndexes()]);
  const impl = createFeedService({ activities, entries, signals, heads, cache, writes, events, consoleSignal, peers: deps.peers, log: deps.log });
  const promoted = await createPromotedModule({ db: deps.db, redis: deps.redis, log: deps.log });
  return {
    name: "feed",
    routes: (router) => {
      router.service(FeedService, impl);
      router.service(PromotedService, promoted);
    },
    async start() {
      if (deps.worker === false) return;
      await fanout.startWorker();
      outbox.startRelay();
    },
    async stop() {
      await outbox.stop();
      await fanout.stop();
    },
  };
}
