import type { Collection, Db } from "mongodb";

export interface ReactionDoc {
  _id: string; // reaction id (uuid)
  tenant_id: string;
  activity_id: string;
  user_id: string;
  kind: string;
  created_at: Date;
}

/** All MongoDB access for reactions; every method takes the tenant first. */
export function createReactionRepository(db: Db) {
  const reactions: Collection<ReactionDoc> = db.collection<ReactionDoc>("reactions");
  return {
    async ensureIndexes() {
      await reactions.createIndex({ tenant_id: 1, user_id: 1, activity_id: 1 });
      await reactions.createIndex({ tenant_id: 1, activity_id: 1, created_at: -1 });
    },
    /** One query for a whole page of activities. */
    ofUser: (tenantId: string, userId: string, activityIds: string[]) =>
      reactions
        .find({ tenant_id: tenantId, user_id: userId, activity_id: { $in: activityIds } }, { projection: { activity_id: 1, kind: 1 } })
        .toArray(),
  };
}

export type ReactionRepository = ReturnType<typeof createReactionRepository>;
