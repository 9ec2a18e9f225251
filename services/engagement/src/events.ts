import type { RepairedChange } from "./counted-writes.js";
import { newEvent, type FeedEvent } from "@feeds/kit";
import type { CommentDoc, CommentRepository } from "./comment-repository.js";
import type { ReactionDoc, ReactionRepository } from "./reaction-repository.js";

// The events of reactions and comments (contract section 3), recorded through the service's
// outbox. `data` is the public payload (the Reaction, the Reply); `meta` is for the notification
// worker: `activity_actor` (the activity's actor), `actor` (`user:<who acted>`) and, for
// replies, `parent_user_id` (the parent comment's author).

export const reactionJson = (r: ReactionDoc) => ({
  id: r.id,
  activity_id: r.activity_id,
  user_id: r.user_id,
  kind: r.kind,
  created_at: r.created_at.toISOString(),
});

export const commentJson = (c: CommentDoc) => ({
  id: c._id,
  activity_id: c.activity_id,
  parent_id: c.parent_id,
  user_id: c.user_id,
  text: c.text,
  reply_count: c.reply_count,
  created_at: c.created_at.toISOString(),
  edited_at: c.edited_at?.toISOString() ?? null,
});

export const reactionEvent = (type: "reaction.added" | "reaction.deleted", r: ReactionDoc, activityActor: string, at: Date): FeedEvent =>
  newEvent(type, r.tenant_id, reactionJson(r), { at, meta: { activity_actor: activityActor, actor: `user:${r.user_id}` } });

export const commentEvent = (
  type: "comment.added" | "comment.deleted",
  c: CommentDoc,
  activityActor: string,
  parentUserId: string | null,
  at: Date,
): FeedEvent =>
  newEvent(type, c.tenant_id, commentJson(c), {
    at,
    meta: { activity_actor: activityActor, actor: `user:${c.user_id}`, ...(parentUserId !== null ? { parent_user_id: parentUserId } : {}) },
  });

/**
 * The outbox relay's question for a record whose writer died: did its write happen? A reaction
 * added is stored (under its id), one deleted is gone; a comment added is stored (deleted later
 * or not), one deleted is gone or marked deleted. A reaction's record is also the recount mark of
 * its activity (the writer counts inside the recorded write): `recount` runs first.
 */
export function createConfirm(deps: {
  reactions: Pick<ReactionRepository, "byId">;
  comments: Pick<CommentRepository, "exists" | "live">;
  /**
   * Recounts an activity's reactions from the records for the change of outbox record `record`
   * (moving the version once if the change happened and its writer did not count it); a missing
   * or deleted activity is no error.
   */
  recount: (tenantId: string, activityId: string, change: RepairedChange) => Promise<void>;
}) {
  return async (e: FeedEvent, record: string): Promise<boolean> => {
    const id = typeof e.data.id === "string" ? e.data.id : "";
    if (e.type === "reaction.added" || e.type === "reaction.deleted") {
      const happened = async () => {
        const stored = (await deps.reactions.byId(e.tenant_id, id)) !== null;
        return e.type === "reaction.added" ? stored : !stored;
      };
      await deps.recount(e.tenant_id, typeof e.data.activity_id === "string" ? e.data.activity_id : "", { record, happened });
      return happened();
    }
    if (e.type === "comment.added") return deps.comments.exists(e.tenant_id, id);
    if (e.type === "comment.deleted") return (await deps.comments.live(e.tenant_id, id)) === null;
    // Not ours: this outbox records no other type.
    return false;
  };
}
