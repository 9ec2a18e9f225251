import type { Lease } from "@feeds/kit";
import type { Activities } from "./activities.js";
import type { CommentRepository } from "./comment-repository.js";
import type { Recount } from "./counted-writes.js";
import type { ReactionRepository } from "./reaction-repository.js";

/** Counts made from the records, stored while the caller holds the target's lock. */
export function createRecounts(deps: {
  reactions: Pick<ReactionRepository, "countKind" | "countAll">;
  comments: Pick<CommentRepository, "countReplies" | "setReplyCount">;
  activities: Pick<Activities, "setCounts">;
}) {
  const { reactions, comments, activities } = deps;

  /**
   * The kinds changed by `changes` reactions stored or removed (a batch of them, see
   * `count-batcher.ts`): each kind counted and stored, the version moved once per change (also
   * when another count already held one of them).
   */
  async function reactionKinds(tenantId: string, activityId: string, kinds: string[], changes: number, lease: Lease): Promise<void> {
    const counts = Object.fromEntries(await Promise.all(kinds.map(async (k) => [k, await reactions.countKind(tenantId, activityId, k)] as const)));
    await lease.assertHeld();
    await activities.setCounts(tenantId, activityId, counts, { complete: false, changes });
  }

  /** Every kind (the relay's repair): the counts replace reaction_counts; the version moves if they differ. */
  const reactionsOf: Recount = async (tenantId, activityId, lease) => {
    const counts = await reactions.countAll(tenantId, activityId);
    await lease.assertHeld();
    await activities.setCounts(tenantId, activityId, counts, { complete: true, changes: 0 });
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
