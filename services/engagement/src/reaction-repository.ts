import type { Collection, Db } from "mongodb";
import { isDuplicateKey } from "@feeds/kit";

export interface ReactionDoc {
  /** `tenant/activity/user/kind`: one reaction per user and kind, made atomic by the unique `_id`. */
  _id: string;
  /** The reaction's public id (uuid). */
  id: string;
  tenant_id: string;
  activity_id: string;
  user_id: string;
  kind: string;
  created_at: Date;
}

/** The key of a user's reaction of a kind (none of the parts can hold a `/`: ids, uuids, kinds). */
export const reactionKey = (tenantId: string, activityId: string, userId: string, kind: string) =>
  `${tenantId}/${activityId}/${userId}/${kind}`;

/** All MongoDB access for reactions; every method takes the tenant first. */
export function createReactionRepository(db: Db) {
  const reactions: Collection<ReactionDoc> = db.collection<ReactionDoc>("reactions");
  return {
    async ensureIndexes() {
      await reactions.createIndex({ tenant_id: 1, id: 1 });
      await reactions.createIndex({ tenant_id: 1, user_id: 1, activity_id: 1 });
      await reactions.createIndex({ tenant_id: 1, activity_id: 1, created_at: -1, id: -1 });
      await reactions.createIndex({ tenant_id: 1, activity_id: 1, kind: 1, created_at: -1, id: -1 });
    },
    get: (tenantId: string, activityId: string, userId: string, kind: string) =>
      reactions.findOne({ _id: reactionKey(tenantId, activityId, userId, kind), tenant_id: tenantId }),
    byId: (tenantId: string, id: string) => reactions.findOne({ tenant_id: tenantId, id }),
    /** Stores `doc`, or answers the reaction already stored under its key. */
    async insert(doc: ReactionDoc): Promise<{ doc: ReactionDoc; created: boolean }> {
      try {
        await reactions.insertOne(doc);
        return { doc, created: true };
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        const existing = await reactions.findOne({ _id: doc._id, tenant_id: doc.tenant_id });
        if (!existing) throw e;
        return { doc: existing, created: false };
      }
    },
    /** Answers whether it was there. */
    remove: async (doc: ReactionDoc) => (await reactions.deleteOne({ _id: doc._id, tenant_id: doc.tenant_id })).deletedCount === 1,
    countKind: (tenantId: string, activityId: string, kind: string) =>
      reactions.countDocuments({ tenant_id: tenantId, activity_id: activityId, kind }),
    /** Every kind's count on one activity (a full recount). */
    async countAll(tenantId: string, activityId: string): Promise<Record<string, number>> {
      const rows = await reactions
        .aggregate<{ _id: string; n: number }>([
          { $match: { tenant_id: tenantId, activity_id: activityId } },
          { $group: { _id: "$kind", n: { $sum: 1 } } },
        ])
        .toArray();
      return Object.fromEntries(rows.map((r) => [r._id, r.n]));
    },
    /** Newest first, (created_at desc, id desc), one more than `limit` to tell whether more exist. */
    page(tenantId: string, activityId: string, kind: string | null, limit: number, after: { time: Date; id: string } | null) {
      const base = { tenant_id: tenantId, activity_id: activityId, ...(kind ? { kind } : {}) };
      const filter = after ? { ...base, $or: [{ created_at: { $lt: after.time } }, { created_at: after.time, id: { $lt: after.id } }] } : base;
      return reactions.find(filter).sort({ created_at: -1, id: -1 }).limit(limit + 1).toArray();
    },
    /** One query for a whole page of activities. */
    ofUser: (tenantId: string, userId: string, activityIds: string[]) =>
      reactions
        .find({ tenant_id: tenantId, user_id: userId, activity_id: { $in: activityIds } }, { projection: { activity_id: 1, kind: 1 } })
        .toArray(),
  };
}

export type ReactionRepository = ReturnType<typeof createReactionRepository>;
