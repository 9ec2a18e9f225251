import type { Collection, Db } from "mongodb";
import { createCountSignal, isDuplicateKey, type RedisConn } from "@feeds/kit";

// Published webhook event records: one per event and destination, created by the notify worker
// before the delivery task exists and updated after each attempt. Status: `pending` until an
// attempt is answered 2xx (`published`) or the delivery is given up (`failed`, dead-lettered).

export type RecordStatus = "pending" | "published" | "failed";

export interface RecordDoc {
  _id: string; // uuid derived from event id and destination id
  tenant_id: string;
  event_id: string;
  event_type: string;
  destination_id: string;
  status: RecordStatus;
  attempts: number;
  created_at: Date;
  updated_at: Date;
}

export function createRecordRepository(db: Db, redis: RedisConn) {
  const records: Collection<RecordDoc> = db.collection<RecordDoc>("webhook_events");
  // The console's change signal of the event log (count of records, version of any change).
  const signal = createCountSignal(redis, "webhook_events");
  const bump = (tenantId: string, added: number) => signal.bump(tenantId, added);

  return {
    async ensureIndexes() {
      await records.createIndex({ tenant_id: 1, created_at: -1, _id: -1 });
    },

    /**
     * Inserts the records that do not exist yet; answers those still pending (new ones, and
     * existing ones a redelivered event finds undelivered), which need a delivery task.
     */
    async create(tenantId: string, docs: RecordDoc[]): Promise<RecordDoc[]> {
      let duplicates = new Set<number>();
      try {
        await records.insertMany(docs, { ordered: false });
      } catch (e) {
        const errors = (e as { writeErrors?: { index: number; code?: number }[] | { index: number; code?: number } }).writeErrors;
        const list = Array.isArray(errors) ? errors : errors ? [errors] : [];
        if (!list.length || !list.every((w) => w.code === 11000 || isDuplicateKey(w))) throw e;
        duplicates = new Set(list.map((w) => w.index));
      }
      const added = docs.length - duplicates.size;
      if (added) await bump(tenantId, added);
      if (!duplicates.size) return docs;
      const existing = await records.find({ _id: { $in: docs.filter((_, i) => duplicates.has(i)).map((d) => d._id) } }).toArray();
      const pending = new Set(existing.filter((d) => d.status === "pending").map((d) => d._id));
      return docs.filter((d, i) => !duplicates.has(i) || pending.has(d._id));
    },

    /** Counts a successful attempt: the record is published. */
    async published(tenantId: string, id: string): Promise<void> {
      await records.updateOne({ _id: id, tenant_id: tenantId }, { $inc: { attempts: 1 }, $set: { status: "published", updated_at: new Date() } });
      await bump(tenantId, 0);
    },

    /** Counts a failed attempt; answers the attempts made so far (0: no such record). */
    async attemptFailed(tenantId: string, id: string): Promise<number> {
      const doc = await records.findOneAndUpdate(
        { _id: id, tenant_id: tenantId },
        { $inc: { attempts: 1 }, $set: { updated_at: new Date() } },
        { returnDocument: "after" },
      );
      return doc?.attempts ?? 0;
    },

    /** Gives up on a delivery (dead-lettered, destination gone, address refused). */
    async fail(tenantId: string, id: string): Promise<void> {
      await records.updateOne({ _id: id, tenant_id: tenantId, status: "pending" }, { $set: { status: "failed", updated_at: new Date() } });
      await bump(tenantId, 0);
    },

    /** Newest first, (created_at desc, id desc). */
    page(tenantId: string, limit: number, after: { created_at: Date; id: string } | null) {
      const filter = after
        ? { tenant_id: tenantId, $or: [{ created_at: { $lt: after.created_at } }, { created_at: after.created_at, _id: { $lt: after.id } }] }
        : { tenant_id: tenantId };
      return records.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray();
    },

    /** The console's signal from Redis; MongoDB is counted only when Redis lost it. */
    signal: (tenantId: string) => signal.read(tenantId, () => records.countDocuments({ tenant_id: tenantId })),
  };
}

export type RecordRepository = ReturnType<typeof createRecordRepository>;
