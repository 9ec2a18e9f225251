import type { Collection, Db } from "mongodb";
import { createInsertBatcher } from "@feeds/kit";

/** One activity in one feed: the materialised timeline. */
export interface EntryDoc {
  _id: string; // `${tenant}/${feed}/${activity_id}`: one entry per (feed, activity)
  tenant_id: string;
  feed: string;
  activity_id: string;
  time: Date;
  /** The feed the activity was posted to (unfollow removes what came from the target). */
  origin: string;
}

export interface NewEntry {
  feed: string;
  activity_id: string;
  time: Date;
  origin: string;
}

/** All MongoDB access for feed entries; every method takes the tenant. */
export function createEntryRepository(db: Db) {
  const entries: Collection<EntryDoc> = db.collection<EntryDoc>("feed_entries");
  // Under load, concurrent writes' origin entries share commands (kit's insert batcher), and so
  // do small fan-outs' chunks once more than eight are out (a worker runs eight tasks at once;
  // follow copies add to them); a large chunk goes out on its own. Two lanes: a write waits for
  // writes only, never behind a command of a thousand fan-out entries.
  const single = createInsertBatcher(entries);
  const chunks = createInsertBatcher(entries, { maxInFlight: 8 });
  /** Stores the entries that do not exist yet; answers the activity ids whose entries it stored. */
  async function insertNew(tenantId: string, items: NewEntry[]): Promise<string[]> {
    const docs: EntryDoc[] = items.map((e) => ({
      _id: `${tenantId}/${e.feed}/${e.activity_id}`,
      tenant_id: tenantId,
      feed: e.feed,
      activity_id: e.activity_id,
      time: e.time,
      origin: e.origin,
    }));
    const { duplicates } = await (docs.length === 1 ? single : chunks).insert(docs);
    const existed = new Set(duplicates);
    return docs.flatMap((d, i) => (existed.has(i) ? [] : [d.activity_id]));
  }

  return {
    async ensureIndexes() {
      await entries.createIndex({ tenant_id: 1, feed: 1, time: -1, activity_id: -1 });
      await entries.createIndex({ tenant_id: 1, activity_id: 1 });
      await entries.createIndex({ tenant_id: 1, feed: 1, origin: 1 });
    },
    /**
     * Idempotent: an entry that exists is left as it is (redelivered work writes nothing twice).
     * Unordered inserts keyed by `_id`: a duplicate key is an entry already written, answered by
     * the unique index alone (an upsert would look the entry up first). Answers how many it stored.
     */
    async upsertMany(tenantId: string, items: NewEntry[]): Promise<number> {
      return (await insertNew(tenantId, items)).length;
    },
    /** As `upsertMany`; answers the activity ids whose entries this call stored (they were not there). */
    insertNew,
    /** One keyset page: (time desc, activity_id desc), limit + 1 rows to know whether more exist. */
    page(tenantId: string, feed: string, limit: number, after: { time: Date; id: string } | null) {
      const filter = after
        ? {
            tenant_id: tenantId,
            feed,
            $or: [{ time: { $lt: after.time } }, { time: after.time, activity_id: { $lt: after.id } }],
          }
        : { tenant_id: tenantId, feed };
      return entries.find(filter).sort({ time: -1, activity_id: -1 }).limit(limit + 1).toArray();
    },
    feedsOf: async (tenantId: string, activityId: string) =>
      (await entries.find({ tenant_id: tenantId, activity_id: activityId }, { projection: { feed: 1 } }).toArray()).map((e) => e.feed),
    removeActivity: (tenantId: string, activityId: string) => entries.deleteMany({ tenant_id: tenantId, activity_id: activityId }),
    /** Removes the feed's entries from `origin` (only those of `activityIds` when given). */
    removeOrigin: (tenantId: string, feed: string, origin: string, activityIds?: readonly string[]) =>
      entries.deleteMany({ tenant_id: tenantId, feed, origin, ...(activityIds ? { activity_id: { $in: [...activityIds] } } : {}) }),
  };
}

export type EntryRepository = ReturnType<typeof createEntryRepository>;
