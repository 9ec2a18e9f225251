import type { Db } from "mongodb";
import { createOutbox, createWorkerBeats, ensureQueue, type Clients, type Logger, type Nats, type RedisConn, type ServiceModule } from "@feeds/kit";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";
import { createCountRepository } from "./count-repository.js";
import { createFollowRepository, type FollowDoc } from "./follow-repository.js";
import { createFollowWrites, FOLLOW_GRACE_MS, FOLLOWS } from "./follow-writes.js";
import { createFollowerSets } from "./follower-sets.js";
import { createGraphService } from "./routes.js";
import { historyTasks } from "./tasks.js";
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
  const outbox = createOutbox({ db: deps.db, nats: deps.nats, log: deps.log, graceMs: FOLLOW_GRACE_MS });
  const followerSets = createFollowerSets(deps.redis, follows);
  const writes = createFollowWrites({ follows, counts, outbox, nats: deps.nats, tasks: historyTasks(deps.nats), followerSets, log: deps.log });
  // A change whose writer died (or could not publish) is finished by the relay (follow-writes.ts).
  outbox.register(FOLLOWS, (doc, change) => writes.finish(doc as FollowDoc, change));
  await Promise.all([follows.ensureIndexes(), counts.ensureIndexes(), outbox.ensureIndexes()]);
  // The history worker reconciles each task with the edge after its own writes (worker.ts).
  const worker = createHistoryWorker({
    nats: deps.nats,
    follows,
    peers: deps.peers,
    log: deps.log,
    beats: createWorkerBeats(deps.redis),
  });
  const impl = createGraphService({ follows, counts, writes, followerSets });
  return {
    name: "graph",
    routes: (router) => router.service(GraphService, impl),
    async start() {
      if (deps.worker === false) return;
      await worker.start();
      outbox.startRelay();
    },
    async stop() {
      await outbox.stop();
      await worker.stop();
    },
  };
}
