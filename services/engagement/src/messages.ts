import { create } from "@bufbuild/protobuf";
import { toTimestamp } from "@feeds/kit";
import { CommentSchema, ReactionSchema, type Comment, type Reaction } from "@feeds/proto/feeds/engagement/v1/engagement";
import type { CommentDoc } from "./comment-repository.js";
import type { ReactionDoc } from "./reaction-repository.js";

// Stored records → the service's messages.

export const reactionMessage = (r: ReactionDoc): Reaction =>
  create(ReactionSchema, { id: r.id, activityId: r.activity_id, userId: r.user_id, kind: r.kind, createdAt: toTimestamp(r.created_at) });

export const commentMessage = (c: CommentDoc): Comment =>
  create(CommentSchema, {
    id: c._id,
    activityId: c.activity_id,
    ...(c.parent_id !== null ? { parentId: c.parent_id } : {}),
    userId: c.user_id,
    text: c.text,
    replyCount: BigInt(c.reply_count),
    createdAt: toTimestamp(c.created_at),
    ...(c.edited_at ? { editedAt: toTimestamp(c.edited_at) } : {}),
  });
