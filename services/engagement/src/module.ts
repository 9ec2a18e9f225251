import type { Db } from "mongodb";
import {
  createEventOutbox,
  createLocks,
  ensureQueue,
  fromRpcError,
  type Clients,
  type Logger,
  type Nats,
  type RedisConn,
  type ServiceModule,
} from "@feeds/kit";
import { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { createActivities } from "./activities.js";
import { createModeration } from "./blocklist.js";
import { createCommentRepository } from "./comment-repository.js";
import { createCountedWrites, type RepairedChange } from "./counted-writes.js";
import { createCountBatcher } from "./count-batcher.js";
import { createCountClaims } from "./count-claims.js";
import { createConfirm } from "./events.js";
import { createKeyLocks } from "./key-locks.js";
import { createKindBound } from "./kind-bound.js";
import { createMarkRepository } from "./mark-repository.js";
import { createOwnReactions } from "./own-reactions.js";
import { createReactionKinds } from "./reaction-kinds.js";
import { createReactionRepository } from "./reaction-repository.js";
import { createReactionWrites } from "./reaction-writes.js";
import { createRecountRelay } from "./recount-relay.js";
import { createRecounts } from "./recounts.js";
import { createEngagementService } from "./routes.js";

/** The engagement service: reactions with exact counts and bounded kinds, comments with one level of replies, the blocklist. */
export async function createEngagementModule(deps: {
  db: Db;
  redis: RedisConn;
  nats: Nats;
  /** The feed service: live activities and their reaction counts. */
  peers: () => Pick<Clients, "feed">;
  log: Logger;
  /** Run the outbox and recount relays in this process (default true). */
  worker?: boolean;
}): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "notify");
  const reactions = createReactionRepository(deps.db);
  const comments = createCommentRepository(deps.db);
  const marks = createMarkRepository(deps.db);
  const activities = createActivities(deps.peers);
  const claims = createCountClaims(deps.db);
  const recounts = createRecounts({ reactions, comments, activities, claim: claims.claim });
  const counted = createCountedWrites({
    locks: createKeyLocks(createLocks(deps.db, "engagement_locks")),
    marks,
    recounts: { reactions: recounts.reactions, replies: recounts.replies },
  });
  const recountReactions = async (tenantId: string, activityId: string, change: RepairedChange) => {
    await counted.repair("reactions", tenantId, activityId, change).catch((e: unknown) => {
      if (fromRpcError(e).code !== "NOT_FOUND") throw e;
    });
  };
  const outbox = createEventOutbox({
    db: deps.db,
    nats: deps.nats,
    log: deps.log,
    collection: "engagement_outbox",
    confirm: createConfirm({ reactions, comments, recount: recountReactions }),
  });
  await Promise.all([reactions.ensureIndexes(), comments.ensureIndexes(), marks.ensureIndexes(), outbox.ensureIndexes(), claims.ensureIndexes()]);
  const own = createOwnReactions({ reactions, redis: deps.redis });
  const counts = createCountBatcher((tenantId, activityId, kinds, records) =>
    counted.withLock("reactions", tenantId, activityId, (lease) => recounts.reactionKinds(tenantId, activityId, kinds, records, lease)),
  );
  const writes = createReactionWrites({ outbox, counts, counted, own });
  const relay = createRecountRelay({ marks, counted, sweep: claims.sweep, log: deps.log });
  const moderation = createModeration(deps.db);
  const kinds = createReactionKinds({ db: deps.db, redis: deps.redis });
  const bound = createKindBound({ activities, counted, recounts });
  const impl = createEngagementService({
    reactions: { reactions, activities, writes, own, kinds, bound },
    comments: { comments, activities, counted, recounts, moderation, outbox },
    moderation,
    kinds,
  });
  return {
    name: "engagement",
    routes: (router) => router.service(EngagementService, impl),
    async start() {
      if (deps.worker === false) return;
      outbox.startRelay();
      relay.start();
    },
    async stop() {
      relay.stop();
      outbox.stop();
    },
  };
}
