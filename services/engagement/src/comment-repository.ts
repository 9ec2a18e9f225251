import type { Collection, Db } from "mongodb";
import { onceFilter, onceUpdate, type OutboxFields, type PendingChange } from "@feeds/kit";

export const COMMENTS = "comments";

export interface CommentDoc extends OutboxFields {
  _id: string; // comment id (uuid)
  tenant_id: string;
  activity_id: string;
  /** The top-level comment a reply answers; null for a top-level comment. */
  parent_id: string | null;
  user_id: string;
  text: string;
  /** Replies of a top-level comment: each reply's pending change moves it once (`changeReplies`). */
  reply_count: number;
  created_at: Date;
  edited_at: Date | null;
  /** Set first when a comment is deleted (it, and a top-level one's replies, leave every read at once). */
  deleted_at: Date | null;
  /** Reply changes applied to this top-level comment's reply_count and not yet cleared. */
  applied?: string[];
}

type After = { time: Date; id: string } | null;

/** All MongoDB access for comments and replies; every method takes the tenant first. */
export function createCommentRepository(db: Db) {
  const comments: Collection<CommentDoc> = db.collection<CommentDoc>(COMMENTS);

  /** Oldest first, (created_at asc, id asc), one more than `limit`. */
  const page = (filter: Record<string, unknown>, limit: number, after: After) =>
    comments
      .find(after ? { ...filter, $or: [{ created_at: { $gt: after.time } }, { created_at: after.time, _id: { $gt: after.id } }] } : filter)
      .sort({ created_at: 1, _id: 1 })
      .limit(limit + 1)
      .toArray();

  return {
    async ensureIndexes() {
      await comments.createIndex({ tenant_id: 1, activity_id: 1, parent_id: 1, created_at: 1, _id: 1 });
      await comments.createIndex({ tenant_id: 1, parent_id: 1, created_at: 1, _id: 1 });
    },
    insert: (doc: CommentDoc) => comments.insertOne(doc),
    /** The comment unless it is missing or deleted. */
    live: (tenantId: string, id: string) => comments.findOne({ _id: id, tenant_id: tenantId, deleted_at: null }),
    editText: (tenantId: string, id: string, text: string, at: Date) =>
      comments.findOneAndUpdate({ _id: id, tenant_id: tenantId, deleted_at: null }, { $set: { text, edited_at: at } }, { returnDocument: "after" }),
    /**
     * Marks a live comment deleted, with its pending change (no other change pending: an earlier
     * one, e.g. its own add, is made first). Answers whether it was marked.
     */
    async markDeleted(tenantId: string, id: string, at: Date, change: PendingChange): Promise<boolean> {
      const r = await comments.updateOne(
        { _id: id, tenant_id: tenantId, deleted_at: null, outbox_pending: { $exists: false } },
        { $set: { deleted_at: at, outbox_pending: true }, $push: { outbox: change } },
      );
      return r.matchedCount === 1;
    },
    /** A live top-level comment's reply_count by `delta`, once for change `changeId`; answers whether it moved. */
    async changeReplies(tenantId: string, parentId: string, delta: 1 | -1, changeId: string): Promise<boolean> {
      const r = await comments.updateOne(
        onceFilter({ _id: parentId, tenant_id: tenantId, parent_id: null, deleted_at: null }, changeId),
        onceUpdate({ $inc: { reply_count: delta } }, changeId),
      );
      return r.matchedCount === 1;
    },
    /** Whether change `changeId` is applied to the comment (a replay that matched nothing). */
    applied: async (tenantId: string, id: string, changeId: string) =>
      (await comments.findOne({ _id: id, tenant_id: tenantId, applied: changeId }, { projection: { _id: 1 } })) !== null,
    removeReplies: (tenantId: string, parentId: string) => comments.deleteMany({ tenant_id: tenantId, parent_id: parentId }),
    remove: async (tenantId: string, id: string) => (await comments.deleteOne({ _id: id, tenant_id: tenantId })).deletedCount === 1,
    topLevel: (tenantId: string, activityId: string, limit: number, after: After) =>
      page({ tenant_id: tenantId, activity_id: activityId, parent_id: null, deleted_at: null }, limit, after),
    replies: (tenantId: string, parentId: string, limit: number, after: After) =>
      page({ tenant_id: tenantId, parent_id: parentId, deleted_at: null }, limit, after),
  };
}

export type CommentRepository = ReturnType<typeof createCommentRepository>;
