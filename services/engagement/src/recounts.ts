import type { Lease } from "@feeds/kit";
import type { Activities } from "./activities.js";
import type { CommentRepository } from "./comment-repository.js";
import type { Recount, RepairedChange } from "./counted-writes.js";
import type { ReactionRepository } from "./reaction-repository.js";

/** Counts made from the records, stored while the caller holds the target's lock. */
export function createRecounts(deps: {
  reactions: Pick<ReactionRepository, "countKind" | "countAll">;
  comments: Pick<CommentRepository, "countReplies" | "setReplyCount">;
  activities: Pick<Activities, "setCounts">;
  /** Claims the counting of outbox records' changes (answers how many were not claimed before). */
  claim: (records: string[]) => Promise<number>;
}) {
  const { reactions, comments, activities, claim } = deps;

  /**
   * The kinds changed by a batch of reaction changes (see `count-batcher.ts`), each recorded by
   * its outbox record: each kind counted and stored; the version moves once per change claimed
   * here. A change the outbox relay already counted (its writer was slower than the relay) is
   * claimed, so it moves the version once, not twice.
   */
  async function reactionKinds(tenantId: string, activityId: string, kinds: string[], records: string[], lease: Lease): Promise<void> {
    const counts = Object.fromEntries(await Promise.all(kinds.map(async (k) => [k, await reactions.countKind(tenantId, activityId, k)] as const)));
    await lease.assertHeld();
    const changes = await claim(records);
    await activities.setCounts(tenantId, activityId, counts, { complete: false, changes, exact: true });
  }

  /**
   * Every kind: the counts replace reaction_counts. The outbox relay's repair of a dead or slow
   * writer's change names its record and whether the change happened: the version moves once if
   * it claims a change that happened, else not at all. The recount relay's (a failed count) names
   * none: the version moves once if the counts differ.
   */
  const reactionsOf: Recount = async (tenantId: string, activityId: string, lease: Lease, change?: RepairedChange): Promise<void> => {
    const counts = await reactions.countAll(tenantId, activityId);
    await lease.assertHeld();
    if (change === undefined) {
      await activities.setCounts(tenantId, activityId, counts, { complete: true, changes: 0, exact: false });
      return;
    }
    const changes = (await change.happened()) ? await claim([change.record]) : 0;
    await activities.setCounts(tenantId, activityId, counts, { complete: true, changes, exact: true });
  };

  /** A top-level comment's reply_count. */
  const replies: Recount = async (tenantId, commentId, lease) => {
    const n = await comments.countReplies(tenantId, commentId);
    await lease.assertHeld();
    await comments.setReplyCount(tenantId, commentId, n);
  };

  return { reactionKinds, reactions: reactionsOf, replies };
}

export type Recounts = ReturnType<typeof createRecounts>;
