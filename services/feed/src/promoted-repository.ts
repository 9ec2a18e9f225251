import type { Collection, Db, Filter } from "mongodb";
import { onceFilter, onceUpdate } from "@feeds/kit";
import { snapshotIdOf, type ServedCounter } from "./promoted-served.js";

// Promoted activities: one collection, `promoted`, each record carrying its tenant. A record is
// inserted, counted and retracted, each by one atomic update:
//
// - served_count: deliveries are counted in Redis by the serve path (promoted-served.ts), no
//   database write per read; folders apply them in snapshots, one once-only `$inc` per record
//   conditioned on the snapshot's id (the record remembers it in `applied`), so any number of
//   folders, and one finishing what a dead one began, count each snapshot once;
// - retraction: `retracted_at` set only where it is still null, so of concurrent retracts
//   exactly one wins.

export interface AudienceDoc {
  users: string[];
  /** Feeds as `group:id`. */
  feeds: string[];
}

export interface PromotedDoc {
  _id: string; // uuid
  tenant_id: string;
  actor: string;
  verb: string;
  object: string;
  custom_json: string;
  /** null: shown to every read. */
  audience: AudienceDoc | null;
  created_at: Date;
  retracted_at: Date | null;
  /** Deliveries folded so far (absent: none). */
  served_count?: number;
  /** Ids of the snapshots counted here and not yet forgotten (see `fold`). */
  applied?: string[];
}

/** Live records a read considers, newest first (the sidecar's bound). */
export const SERVE_LIMIT = 50;
/**
 * How long the records remember a snapshot after it was dropped. A folder that read a snapshot
 * before another one dropped it may apply it later than that only if it stalled this long
 * between its read and its write; until then its increments match nothing.
 */
export const FORGET_AFTER_MS = 5 * 60_000;

/** A read asking for promoted activities: the feed read (`group:id`) and the end-user, if any. */
export interface PromotedRead {
  feed: string;
  userId: string | null;
}

/**
 * Promoted eligibility (contract): no audience → every read; with one → a read of a feed in
 * `audience.feeds`, or by a user token whose user is in `audience.users`.
 */
export function isEligible(audience: AudienceDoc | null, read: PromotedRead): boolean {
  if (!audience) return true;
  if (audience.feeds.includes(read.feed)) return true;
  return read.userId !== null && audience.users.includes(read.userId);
}

/** The same rule as a storage filter (live records of the tenant that `read` is eligible for). */
export function eligibleFilter(tenantId: string, read: PromotedRead): Filter<PromotedDoc> {
  const or: Filter<PromotedDoc>[] = [{ audience: null }, { "audience.feeds": read.feed }];
  if (read.userId !== null) or.push({ "audience.users": read.userId });
  return { tenant_id: tenantId, retracted_at: null, $or: or };
}

/** All MongoDB access for promoted activities; every method takes the tenant. */
export function createPromotedRepository(db: Db, opts: { forgetAfterMs?: number } = {}) {
  const records: Collection<PromotedDoc> = db.collection<PromotedDoc>("promoted");
  const forgetAfterMs = opts.forgetAfterMs ?? FORGET_AFTER_MS;

  /** Counts a snapshot's deliveries (record id → count) once: one command, replayable. */
  async function applySnapshot(tenantId: string, snapshotId: string, incs: Map<string, number>): Promise<void> {
    if (incs.size === 0) return;
    await records.bulkWrite(
      [...incs].map(([id, n]) => ({
        updateOne: {
          filter: onceFilter<PromotedDoc>({ _id: id, tenant_id: tenantId }, snapshotId),
          update: onceUpdate<PromotedDoc>({ $inc: { served_count: n } }, snapshotId),
        },
      })),
      { ordered: false },
    );
  }

  return {
    async ensureIndexes() {
      await records.createIndex({ tenant_id: 1, created_at: -1, _id: -1 });
      await records.createIndex({ tenant_id: 1, retracted_at: 1, created_at: -1, _id: -1 });
    },

    insert: (doc: PromotedDoc) => records.insertOne(doc),

    get: (tenantId: string, id: string) => records.findOne({ _id: id, tenant_id: tenantId }),

    /** Every record of the tenant, retracted ones included, (created_at desc, id desc); limit + 1 rows. */
    page(tenantId: string, limit: number, after: { createdAt: Date; id: string } | null) {
      const filter: Filter<PromotedDoc> = after
        ? {
            tenant_id: tenantId,
            $or: [{ created_at: { $lt: after.createdAt } }, { created_at: after.createdAt, _id: { $lt: after.id } }],
          }
        : { tenant_id: tenantId };
      return records.find(filter, { projection: { applied: 0 } }).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray();
    },

    /** served_count of each record (folded deliveries; missing → 0). */
    async servedCounts(tenantId: string, ids: string[]): Promise<Map<string, number>> {
      if (ids.length === 0) return new Map();
      const rows = await records.find({ tenant_id: tenantId, _id: { $in: ids } }, { projection: { served_count: 1 } }).toArray();
      return new Map(rows.map((c) => [c._id, c.served_count ?? 0]));
    },

    /** Soft delete: answers false when the record is missing or already retracted (of concurrent retracts exactly one answers true). */
    async retract(tenantId: string, id: string, at: Date): Promise<boolean> {
      const res = await records.updateOne({ _id: id, tenant_id: tenantId, retracted_at: null }, { $set: { retracted_at: at } });
      return res.modifiedCount === 1;
    },

    /** Live records `read` is eligible for, newest first, at most `limit`. */
    async eligible(tenantId: string, read: PromotedRead, limit = SERVE_LIMIT): Promise<PromotedDoc[]> {
      const docs = await records
        .find(eligibleFilter(tenantId, read), { projection: { applied: 0 } })
        .sort({ created_at: -1, _id: -1 })
        .limit(limit)
        .toArray();
      // The storage filter and the predicate are one rule; the predicate has the last word.
      return docs.filter((d) => d.retracted_at === null && isEligible(d.audience, read));
    },

    /** Live records of the tenant, newest first, at most `limit` (what the serve cache holds). */
    liveNewest: (tenantId: string, limit: number) =>
      records
        .find({ tenant_id: tenantId, retracted_at: null }, { projection: { applied: 0, served_count: 0 } })
        .sort({ created_at: -1, _id: -1 })
        .limit(limit)
        .toArray(),

    applySnapshot,

    /**
     * Folds the tenant's deliveries so far into served_count: takes a snapshot of them, then
     * applies every snapshot waiting (also those of a folder that died, or of one running now:
     * their increments match nothing where they were applied already) and drops each after its
     * increments. No lease: folders may run at once. The records forget a snapshot's id
     * `forgetAfterMs` after it was dropped, when no folder can still be about to apply it.
     */
    async fold(tenantId: string, served: ServedCounter): Promise<void> {
      for (const snapshot of await served.snapshots(tenantId)) {
        await applySnapshot(tenantId, snapshotIdOf(snapshot), await served.read(snapshot));
        await served.drop(tenantId, snapshot);
      }
      const old = await served.foldedBefore(tenantId, Date.now() - forgetAfterMs);
      if (old.length) {
        const ids = old.map(snapshotIdOf);
        await records.updateMany({ tenant_id: tenantId, applied: { $in: ids } }, { $pullAll: { applied: ids } });
        await served.forget(tenantId, old);
      }
      await served.settle(tenantId);
    },
  };
}

export type PromotedRepository = ReturnType<typeof createPromotedRepository>;
