import type { Collection, Db } from "mongodb";

export interface CommentDoc {
  _id: string; // comment id (uuid)
  tenant_id: string;
  activity_id: string;
  /** The top-level comment a reply answers; null for a top-level comment. */
  parent_id: string | null;
  user_id: string;
  text: string;
  /** Replies of a top-level comment, recounted from the replies under the comment's lock. */
  reply_count: number;
  created_at: Date;
  edited_at: Date | null;
  /** Set first when a top-level comment is deleted (it and its replies leave every read at once). */
  deleted_at: Date | null;
}

type After = { time: Date; id: string } | null;

/** All MongoDB access for comments and replies; every method takes the tenant first. */
export function createCommentRepository(db: Db) {
  const comments: Collection<CommentDoc> = db.collection<CommentDoc>("comments");

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
    /** Whether the comment is stored at all (deleted or not): the outbox relay's question. */
    exists: async (tenantId: string, id: string) => (await comments.findOne({ _id: id, tenant_id: tenantId }, { projection: { _id: 1 } })) !== null,
    editText: (tenantId: string, id: string, text: string, at: Date) =>
      comments.findOneAndUpdate({ _id: id, tenant_id: tenantId, deleted_at: null }, { $set: { text, edited_at: at } }, { returnDocument: "after" }),
    markDeleted: (tenantId: string, id: string, at: Date) => comments.updateOne({ _id: id, tenant_id: tenantId }, { $set: { deleted_at: at } }),
    removeReplies: (tenantId: string, parentId: string) => comments.deleteMany({ tenant_id: tenantId, parent_id: parentId }),
    remove: async (tenantId: string, id: string) => (await comments.deleteOne({ _id: id, tenant_id: tenantId })).deletedCount === 1,
    countReplies: (tenantId: string, parentId: string) => comments.countDocuments({ tenant_id: tenantId, parent_id: parentId, deleted_at: null }),
    setReplyCount: (tenantId: string, id: string, n: number) =>
      comments.updateOne({ _id: id, tenant_id: tenantId, deleted_at: null }, { $set: { reply_count: n } }),
    topLevel: (tenantId: string, activityId: string, limit: number, after: After) =>
      page({ tenant_id: tenantId, activity_id: activityId, parent_id: null, deleted_at: null }, limit, after),
    replies: (tenantId: string, parentId: string, limit: number, after: After) =>
      page({ tenant_id: tenantId, parent_id: parentId, deleted_at: null }, limit, after),
  };
}

export type CommentRepository = ReturnType<typeof createCommentRepository>;
