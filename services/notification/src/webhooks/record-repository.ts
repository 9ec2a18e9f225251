import type { Collection, Db } from "mongodb";
import { createCountSignal, isDuplicateKey, type RedisConn } from "@feeds/kit";
import { createGroupCommit } from "./group-commit.js";

// Published webhook event records: one per event and destination, written by the delivery
// worker. A delivery's first write is its first outcome (published after a 2xx, pending after a
// failed attempt, failed when given up), or pending when that outcome is slow to come (a long
// attempt, a destination whose slots are taken); later writes update it. First writes are
// inserted in batches (group commit): one storage round trip for every delivery finished
// meanwhile, where an insert at routing and an update per outcome cost two each.

export type RecordStatus = "pending" | "published" | "failed";

export interface RecordDoc {
  _id: string; // uuid derived from event id and destination id
  tenant_id: string;
  event_id: string;
  event_type: string;
  destination_id: string;
  status: RecordStatus;
  attempts: number;
  /** When the notify worker routed the event to the destination. */
  created_at: Date;
  updated_at: Date;
}

/** A record's fields that no attempt changes: what the delivery task carries. */
export type RecordKey = Pick<RecordDoc, "_id" | "tenant_id" | "event_id" | "event_type" | "destination_id" | "created_at">;

export interface RecordChange {
  record: RecordKey;
  /** An attempt was made: attempts + 1. */
  attempted: boolean;
  /** `published`: an attempt answered 2xx. `failed`: given up (a published record stays so). `pending`: as it was. */
  status: RecordStatus;
  /** The record most likely does not exist yet (the task's first delivery): insert, in a batch. */
  fresh: boolean;
}

const BATCH = 500;
/** Batches in flight at once: one being stored while the next fills. */
const BATCHES = 2;

type WriteError = { index: number; code?: number };
const writeErrorsOf = (e: unknown): WriteError[] => {
  const errors = (e as { writeErrors?: WriteError[] | WriteError }).writeErrors;
  return Array.isArray(errors) ? errors : errors ? [errors] : [];
};

export function createRecordRepository(db: Db, redis: RedisConn) {
  const records: Collection<RecordDoc> = db.collection<RecordDoc>("webhook_events");
  // The console's change signal of the event log (count of records, version of any change).
  const signal = createCountSignal(redis, "webhook_events");

  const docOf = (c: RecordChange, at: Date): RecordDoc => ({
    ...c.record,
    status: c.status,
    attempts: c.attempted ? 1 : 0,
    updated_at: at,
  });

  /** Applies a change to a record that may exist; answers its attempts and whether it was inserted. */
  async function apply(c: RecordChange, retried = false): Promise<{ attempts: number; inserted: boolean }> {
    const filter = { _id: c.record._id, tenant_id: c.record.tenant_id };
    const inc = c.attempted ? { $inc: { attempts: 1 } } : {};
    const at = new Date();
    if (c.status === "failed") {
      const doc = await records.findOneAndUpdate({ ...filter, status: "pending" }, { ...inc, $set: { status: "failed", updated_at: at } }, { returnDocument: "after" });
      if (doc) return { attempts: doc.attempts, inserted: false };
    }
    const set = { updated_at: at, ...(c.status === "published" ? { status: "published" as const } : {}) };
    const doc = await records.findOneAndUpdate(filter, { ...inc, $set: set }, { returnDocument: "after" });
    if (doc) return { attempts: doc.attempts, inserted: false };
    const fresh = docOf(c, at);
    try {
      await records.insertOne(fresh);
      return { attempts: fresh.attempts, inserted: true };
    } catch (e) {
      // A twin task (the same event routed again after JetStream's duplicate window) wrote it meanwhile.
      if (retried || !isDuplicateKey(e)) throw e;
      return apply(c, true);
    }
  }

  const writes = createGroupCommit<RecordChange, number>({
    maxBatch: BATCH,
    concurrency: BATCHES,
    async flush(changes) {
      const at = new Date();
      const inserting = changes.flatMap((c, i) => (c.fresh ? [i] : []));
      const failed = new Map<number, unknown>();
      const existed = new Set<number>();
      if (inserting.length) {
        try {
          await records.insertMany(
            inserting.map((i) => docOf(changes[i] as RecordChange, at)),
            { ordered: false },
          );
        } catch (e) {
          const list = writeErrorsOf(e);
          // Nothing says which were stored: the whole batch fails and its tasks are retried.
          if (!list.length) throw e;
          for (const w of list) {
            const i = inserting[w.index] ?? -1;
            if (w.code === 11000 || isDuplicateKey(w)) existed.add(i);
            else failed.set(i, e);
          }
        }
      }
      const added = new Map<string, number>();
      const outcomes = await Promise.allSettled(
        changes.map(async (c, i) => {
          if (failed.has(i)) throw failed.get(i);
          const tenant = c.record.tenant_id;
          added.set(tenant, added.get(tenant) ?? 0);
          if (c.fresh && !existed.has(i)) {
            added.set(tenant, (added.get(tenant) ?? 0) + 1);
            return c.attempted ? 1 : 0;
          }
          const r = await apply(c);
          if (r.inserted) added.set(tenant, (added.get(tenant) ?? 0) + 1);
          return r.attempts;
        }),
      );
      // Best effort: one bump per tenant and batch (the count by the records it inserted).
      await Promise.all([...added].map(([tenant, n]) => signal.bump(tenant, n)));
      return outcomes;
    },
  });

  return {
    async ensureIndexes() {
      await records.createIndex({ tenant_id: 1, created_at: -1, _id: -1 });
    },

    /** Stores a change of a delivery's record (batched); answers the attempts it now counts. */
    write: (change: RecordChange): Promise<number> => writes.write(change),

    /** Of these records, those given up or published (a redelivered event re-queues the rest). */
    async settled(tenantId: string, ids: readonly string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const docs = await records.find({ _id: { $in: [...ids] }, tenant_id: tenantId }, { projection: { status: 1 } }).toArray();
      return new Set(docs.flatMap((d) => (d.status !== "pending" ? [d._id] : [])));
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
