import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";

/** What a mark asks to be recounted: an activity's reaction counts, or a comment's reply_count. */
export type MarkKind = "reactions" | "replies";

export interface MarkDoc {
  _id: string;
  tenant_id: string;
  kind: MarkKind;
  /** The activity id (reactions) or the top-level comment id (replies). */
  target: string;
  at: Date;
}

/**
 * Recount marks: a writer records one (under the target's lock) right before it changes the
 * records a count is made from, and drops it once the count is stored. A mark left behind (the
 * writer died, or its count update failed) is the relay's: it recounts the target from the records.
 */
export function createMarkRepository(db: Db) {
  const marks: Collection<MarkDoc> = db.collection<MarkDoc>("engagement_marks");
  return {
    async ensureIndexes() {
      await marks.createIndex({ at: 1 });
    },
    async add(tenantId: string, kind: MarkKind, target: string): Promise<string> {
      const _id = randomUUID();
      await marks.insertOne({ _id, tenant_id: tenantId, kind, target, at: new Date() });
      return _id;
    },
    drop: (ids: string[]) => marks.deleteMany({ _id: { $in: ids } }),
    stale: (olderThan: Date, limit: number) => marks.find({ at: { $lt: olderThan } }).sort({ at: 1 }).limit(limit).toArray(),
  };
}

export type MarkRepository = ReturnType<typeof createMarkRepository>;
