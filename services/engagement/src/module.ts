import type { Db } from "mongodb";
import { createOutbox, ensureQueue, type Clients, type Logger, type Nats, type RedisConn, type ServiceModule } from "@feeds/kit";
import { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { ACTIVITIES, createActivities } from "./activities.js";
import { createModeration } from "./blocklist.js";
import { GRACE_MS } from "./changes.js";
import { createCommentChanges } from "./comment-changes.js";
import { COMMENTS, createCommentRepository } from "./comment-repository.js";
import { createOwnReactions } from "./own-reactions.js";
import { createReactionChanges } from "./reaction-changes.js";
import { createReactionKinds } from "./reaction-kinds.js";
import { createReactionRepository, REACTIONS } from "./reaction-repository.js";
import { createEngagementService } from "./routes.js";

/** The engagement service: reactions with exact counts and bounded kinds, comments with one level of replies, the blocklist. */
export async function createEngagementModule(deps: {
  db: Db;
  redis: RedisConn;
  nats: Nats;
  /** The feed service: live activities and their reaction counts. */
  peers: () => Pick<Clients, "feed">;
  log: Logger;
  /** Run the outbox relay in this process (default true). */
  worker?: boolean;
}): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "notify");
  const reactions = createReactionRepository(deps.db);
  const comments = createCommentRepository(deps.db);
  const activities = createActivities(deps.peers);
  // Reactions and comments carry their pending changes; the activities' applied ids are the feed
  // service's to clear (through its RPC), the parent comments' are ours.
  const outbox = createOutbox({
    db: deps.db,
    nats: deps.nats,
    log: deps.log,
    graceMs: GRACE_MS,
    clearTargets: { [ACTIVITIES]: (applied) => activities.clearApplied(applied) },
  });
  const own = createOwnReactions({ reactions, redis: deps.redis });
  const reactionChanges = createReactionChanges({ reactions, activities, outbox, own, nats: deps.nats, log: deps.log });
  const commentChanges = createCommentChanges({ comments, outbox, nats: deps.nats, log: deps.log });
  outbox.register(REACTIONS, reactionChanges.finish);
  outbox.register(COMMENTS, commentChanges.finish);
  await Promise.all([reactions.ensureIndexes(), comments.ensureIndexes(), outbox.ensureIndexes()]);
  const moderation = createModeration(deps.db);
  const kinds = createReactionKinds({ db: deps.db, redis: deps.redis });
  const impl = createEngagementService({
    reactions: { reactions, activities, changes: reactionChanges, own, kinds },
    comments: { comments, activities, changes: commentChanges, moderation },
    moderation,
    kinds,
  });
  return {
    name: "engagement",
    routes: (router) => router.service(EngagementService, impl),
    async start() {
      if (deps.worker === false) return;
      outbox.startRelay();
    },
    async stop() {
      await outbox.stop();
    },
  };
}
