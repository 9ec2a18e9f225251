import type { Collection, Db } from "mongodb";
import { createInsertBatcher, type OutboxFields, type PendingChange } from "@feeds/kit";

export interface ReactionDoc extends OutboxFields {
  /** `tenant/activity/user/kind`: one reaction per user and kind, made atomic by the unique `_id`. */
  _id: string;
  /** The reaction's public id (uuid). */
  id: string;
  tenant_id: string;
  activity_id: string;
  user_id: string;
  kind: string;
  created_at: Date;
  /** The activity's actor, for the events' routing meta (absent on reactions stored before). */
  activity_actor?: string;
  /** Set with a pending removal: the reaction has left every read; its document goes next. */
  removing?: true;
}

/** The key of a user's reaction of a kind (none of the parts can hold a `/`: ids, uuids, kinds). */
export const reactionKey = (tenantId: string, activityId: string, userId: string, kind: string) =>
  `${tenantId}/${activityId}/${userId}/${kind}`;

export const REACTIONS = "reactions";

/** Reads see reactions that are not being removed. */
const shown = { removing: { $exists: false } } as const;

/** All MongoDB access for reactions; every method takes the tenant first. */
export function createReactionRepository(db: Db) {
  const reactions: Collection<ReactionDoc> = db.collection<ReactionDoc>(REACTIONS);
  // Concurrent reactions' inserts share commands under load (kit's insert batcher).
  const inserts = createInsertBatcher(reactions);
  return {
    async ensureIndexes() {
      await reactions.createIndex({ tenant_id: 1, id: 1 });
      await reactions.createIndex({ tenant_id: 1, user_id: 1, activity_id: 1 });
      await reactions.createIndex({ tenant_id: 1, activity_id: 1, created_at: -1, id: -1 });
      await reactions.createIndex({ tenant_id: 1, activity_id: 1, kind: 1, created_at: -1, id: -1 });
    },
    get: (tenantId: string, activityId: string, userId: string, kind: string) =>
      reactions.findOne({ _id: reactionKey(tenantId, activityId, userId, kind), tenant_id: tenantId, ...shown }),
    byId: (tenantId: string, id: string) => reactions.findOne({ tenant_id: tenantId, id, ...shown }),
    /** Stores `doc` (with its pending change), or answers the reaction stored under its key already. */
    async insert(doc: ReactionDoc): Promise<{ doc: ReactionDoc; created: boolean } | null> {
      const { duplicates } = await inserts.insert([doc]);
      if (duplicates.length === 0) return { doc, created: true };
      const existing = await reactions.findOne({ _id: doc._id, tenant_id: doc.tenant_id });
      // Gone meanwhile (a removal finished): null, the caller tries again.
      return existing ? { doc: existing, created: false } : null;
    },
    /**
     * Records a pending removal on the reaction `doc` names (the same reaction, not being removed,
     * with no change pending: a pending add must be counted before its reaction can go). Answers
     * whether it was recorded.
     */
    async markRemoving(doc: ReactionDoc, change: PendingChange): Promise<boolean> {
      const r = await reactions.updateOne(
        { _id: doc._id, tenant_id: doc.tenant_id, id: doc.id, removing: { $exists: false }, outbox_pending: { $exists: false } },
        { $set: { removing: true, outbox_pending: true }, $push: { outbox: change } },
      );
      return r.matchedCount === 1;
    },
    /** Deletes the reaction `doc` names (this one: not a later reaction under the same key). */
    remove: async (doc: ReactionDoc) => (await reactions.deleteOne({ _id: doc._id, tenant_id: doc.tenant_id, id: doc.id })).deletedCount === 1,
    /** Newest first, (created_at desc, id desc), one more than `limit` to tell whether more exist. */
    page(tenantId: string, activityId: string, kind: string | null, limit: number, after: { time: Date; id: string } | null) {
      const base = { tenant_id: tenantId, activity_id: activityId, ...(kind ? { kind } : {}), ...shown };
      const filter = after ? { ...base, $or: [{ created_at: { $lt: after.time } }, { created_at: after.time, id: { $lt: after.id } }] } : base;
      return reactions.find(filter).sort({ created_at: -1, id: -1 }).limit(limit + 1).toArray();
    },
    /** One query for a whole page of activities. */
    ofUser: (tenantId: string, userId: string, activityIds: string[]) =>
      reactions
        .find({ tenant_id: tenantId, user_id: userId, activity_id: { $in: activityIds }, ...shown }, { projection: { activity_id: 1, kind: 1 } })
        .toArray(),
  };
}

export type ReactionRepository = ReturnType<typeof createReactionRepository>;
