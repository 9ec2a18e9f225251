import type { Db } from "mongodb";
import {
  createLocks,
  createWorkerBeats,
  ensureQueue,
  publishEvents,
  type Clients,
  type FeedEvent,
  type Logger,
  type Nats,
  type RedisConn,
  type ServiceModule,
} from "@feeds/kit";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";
import { createCountRepository } from "./count-repository.js";
import { createCounter } from "./counter.js";
import { createFollowEventConfirm } from "./follow-events.js";
import { createFeedLocks } from "./feed-locks.js";
import { createFollowRepository } from "./follow-repository.js";
import { createFollowWrites } from "./follow-writes.js";
import { createFollowerSets } from "./follower-sets.js";
import { createPendingRepository } from "./pending-repository.js";
import { createRelay } from "./relay.js";
import { createGraphService } from "./routes.js";
import { createHistoryTasks } from "./tasks.js";
import { createHistoryWorker } from "./worker.js";

/** The graph service: follow edges, counts, suggestions, and the history tasks of follows. */
export async function createGraphModule(deps: {
  db: Db;
  nats: Nats;
  redis: RedisConn;
  /** The feed service, which copies and removes history for the worker. */
  peers: () => Pick<Clients, "feed">;
  log: Logger;
  /** Run the history worker and the outbox relay in this process (default true). */
  worker?: boolean;
}): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "fanout");
  // The follow events go to the notification service's queue: make sure it exists to take them.
  await ensureQueue(deps.nats, "notify");
  const follows = createFollowRepository(deps.db);
  const counts = createCountRepository(deps.db);
  const pending = createPendingRepository(deps.db);
  await Promise.all([follows.ensureIndexes(), counts.ensureIndexes(), pending.ensureIndexes()]);
  const locks = createLocks(deps.db, "graph_locks");
  const counter = createCounter({ follows, counts, feedLocks: createFeedLocks(locks) });
  const tasks = createHistoryTasks(deps.nats);
  const events = (e: FeedEvent[]) => publishEvents(deps.nats, e);
  const followerSets = createFollowerSets(deps.redis, follows);
  const writes = createFollowWrites({ follows, counts, pending, counter, tasks, publishEvents: events, followerSets, log: deps.log });
  const worker = createHistoryWorker({ nats: deps.nats, follows, locks, peers: deps.peers, log: deps.log, beats: createWorkerBeats(deps.redis) });
  const relay = createRelay({ pending, counter, tasks, followerSets, publishEvents: events, confirm: createFollowEventConfirm(follows), log: deps.log });
  const impl = createGraphService({ follows, counts, writes, followerSets });
  return {
    name: "graph",
    routes: (router) => router.service(GraphService, impl),
    async start() {
      if (deps.worker === false) return;
      await worker.start();
      relay.start();
    },
    async stop() {
      relay.stop();
      await worker.stop();
    },
  };
}
