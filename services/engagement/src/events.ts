import { newEvent, type FeedEvent } from "@feeds/kit";
import type { CommentDoc } from "./comment-repository.js";
import type { ReactionDoc } from "./reaction-repository.js";

// The events of reactions and comments (contract section 3), each kept as a pending change in
// the reaction's or comment's own document until it is published (kit's outbox). `data` is the public payload (the Reaction, the Reply); `meta` is for the notification
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
