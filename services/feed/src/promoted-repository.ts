import { randomUUID } from "node:crypto";
import type { Collection, Db, Filter } from "mongodb";
import { internal, isDuplicateKey } from "@feeds/kit";
import type { ServedCounter } from "./promoted-served.js";

// Promoted activities. Four collections, each record carrying its tenant:
//
// - `promoted`: the record. Written twice in its life: insert, and retraction (under a
//   per-record lock, so a second concurrent retract finds it retracted and loses).
// - deliveries: counted in Redis by the serve path (promoted-served.ts), no database write per
//   read; `promoted_deliveries` holds only what older versions wrote (still folded).
// - `promoted_counters`: served_count per record, written only by the tenant's folder.
// - `promoted_folds`: the folder's journal, which makes folding crash-safe.
//
// Why not `$inc` on the record: FerretDB v1 applies every update as read-modify-write of the
// whole document outside any lock (probed on this stack: 40 concurrent `$inc`s of one counter
// left 5; a `$set` racing `$inc`s was lost). Concurrent deliveries would lose counts, and a
// delivery racing a retraction could write the record back un-retracted. So one folder per
// tenant (a lease by unique insert) turns deliveries into counts.

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
}

interface DeliveryDoc {
  _id: string;
  tenant_id: string;
  /** Records delivered by one ServePromoted answer (each counts once). */
  ids: string[];
  at: Date;
}

interface CounterDoc {
  _id: string; // promoted id
  tenant_id: string;
  count: number;
}

/** A fold in progress: absolute counts to set, then its source to drop (a Redis snapshot, or
 * delivery documents). Re-applying is harmless; the journal goes only after its source. */
interface FoldDoc {
  _id: string; // the snapshot's key when it folds one
  tenant_id: string;
  targets: { id: string; count: number }[];
  deliveries: string[];
  snapshot?: string;
  created_at: Date;
}

interface LeaseDoc {
  _id: string;
  holder: string;
  until: Date;
}

/** Live records a read considers, newest first (the sidecar's bound). */
export const SERVE_LIMIT = 50;
/** Deliveries folded per step. */
const FOLD_BATCH = 500;
/** A fold step takes milliseconds; a lease this long is only ever taken over from a dead folder. */
const FOLD_LEASE_MS = 60_000;

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** All MongoDB access for promoted activities; every method takes the tenant. */
export function createPromotedRepository(db: Db) {
  const records: Collection<PromotedDoc> = db.collection<PromotedDoc>("promoted");
  const deliveries: Collection<DeliveryDoc> = db.collection<DeliveryDoc>("promoted_deliveries");
  const counters: Collection<CounterDoc> = db.collection<CounterDoc>("promoted_counters");
  const folds: Collection<FoldDoc> = db.collection<FoldDoc>("promoted_folds");
  const leases: Collection<LeaseDoc> = db.collection<LeaseDoc>("promoted_locks");

  /** One attempt at a lease by unique insert; a lease whose holder died is taken over. */
  async function tryLease(key: string, holder: string, leaseMs: number): Promise<boolean> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await leases.insertOne({ _id: key, holder, until: new Date(Date.now() + leaseMs) });
        return true;
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
      const current = await leases.findOne({ _id: key });
      if (current && current.until.getTime() >= Date.now()) return false;
      if (current) await leases.deleteOne({ _id: key, holder: current.holder });
    }
    return false;
  }

  /** Runs `fn` holding lease `key`, waiting up to `waitMs` for it; answers null when not acquired. */
  async function withLease<T>(key: string, leaseMs: number, waitMs: number, fn: () => Promise<T>): Promise<{ value: T } | null> {
    const holder = randomUUID();
    const deadline = Date.now() + waitMs;
    while (!(await tryLease(key, holder, leaseMs))) {
      if (Date.now() >= deadline) return null;
      await sleep(5 + Math.random() * 20);
    }
    try {
      return { value: await fn() };
    } finally {
      await leases.deleteOne({ _id: key, holder });
    }
  }

  async function applyFold(f: FoldDoc, served: ServedCounter | null): Promise<void> {
    await Promise.all(
      f.targets.map((t) =>
        counters.updateOne({ _id: t.id, tenant_id: f.tenant_id }, { $set: { count: t.count } }, { upsert: true }),
      ),
    );
    if (f.deliveries.length) await deliveries.deleteMany({ tenant_id: f.tenant_id, _id: { $in: f.deliveries } });
    if (f.snapshot) {
      if (!served) throw internal(new Error("a snapshot fold needs the served counter"));
      await served.drop(f.tenant_id, f.snapshot);
    }
    await folds.deleteOne({ _id: f._id, tenant_id: f.tenant_id });
  }

  /** Journals and applies increments (record id → deliveries) on top of the current counts. */
  async function foldIncrements(tenantId: string, incs: Map<string, number>, source: Pick<FoldDoc, "_id" | "deliveries" | "snapshot">, served: ServedCounter | null) {
    const ids = [...incs.keys()];
    const current = new Map(
      (await counters.find({ tenant_id: tenantId, _id: { $in: ids } }).toArray()).map((c) => [c._id, c.count]),
    );
    const fold: FoldDoc = {
      ...source,
      tenant_id: tenantId,
      targets: ids.map((id) => ({ id, count: (current.get(id) ?? 0) + (incs.get(id) ?? 0) })),
      created_at: new Date(),
    };
    // Journal first: a folder that dies after this is finished by the next one, idempotently.
    await folds.insertOne(fold);
    await applyFold(fold, served);
  }

  /** One fold step over delivery documents: answers how many it folded. Caller holds the lease. */
  async function foldStep(tenantId: string): Promise<number> {
    const batch = await deliveries.find({ tenant_id: tenantId }).limit(FOLD_BATCH).toArray();
    if (batch.length === 0) return 0;
    const incs = new Map<string, number>();
    for (const d of batch) for (const id of new Set(d.ids)) incs.set(id, (incs.get(id) ?? 0) + 1);
    await foldIncrements(tenantId, incs, { _id: randomUUID(), deliveries: batch.map((d) => d._id) }, null);
    return batch.length;
  }

  /** Folds every Redis snapshot of the tenant (a new one of its deliveries so far first). Caller holds the lease. */
  async function foldSnapshots(tenantId: string, served: ServedCounter): Promise<void> {
    for (const snapshot of await served.snapshots(tenantId)) {
      const incs = await served.read(snapshot);
      if (incs.size === 0) await served.drop(tenantId, snapshot);
      else await foldIncrements(tenantId, incs, { _id: snapshot, deliveries: [], snapshot }, served);
    }
  }

  return {
    async ensureIndexes() {
      await records.createIndex({ tenant_id: 1, created_at: -1, _id: -1 });
      await records.createIndex({ tenant_id: 1, retracted_at: 1, created_at: -1, _id: -1 });
      await deliveries.createIndex({ tenant_id: 1 });
      await counters.createIndex({ tenant_id: 1 });
      await folds.createIndex({ tenant_id: 1 });
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
      return records.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray();
    },

    /** served_count of each record (folded deliveries; missing → 0). */
    async servedCounts(tenantId: string, ids: string[]): Promise<Map<string, number>> {
      if (ids.length === 0) return new Map();
      const rows = await counters.find({ tenant_id: tenantId, _id: { $in: ids } }).toArray();
      return new Map(rows.map((c) => [c._id, c.count]));
    },

    /**
     * Soft delete under a per-record lock: answers false when the record is missing or already
     * retracted, so of two concurrent retracts exactly one answers true.
     */
    async retract(tenantId: string, id: string, at: Date): Promise<boolean> {
      const res = await withLease(`retract:${tenantId}:${id}`, 10_000, 8_000, async () => {
        const doc = await records.findOne({ _id: id, tenant_id: tenantId });
        if (!doc || doc.retracted_at) return false;
        await records.updateOne({ _id: id, tenant_id: tenantId }, { $set: { retracted_at: at } });
        return true;
      });
      if (!res) throw internal(new Error(`promoted ${id}: retract lock not acquired`));
      return res.value;
    },

    /** Live records `read` is eligible for, newest first, at most `limit`. */
    async eligible(tenantId: string, read: PromotedRead, limit = SERVE_LIMIT): Promise<PromotedDoc[]> {
      const docs = await records.find(eligibleFilter(tenantId, read)).sort({ created_at: -1, _id: -1 }).limit(limit).toArray();
      // The storage filter and the predicate are one rule; the predicate has the last word.
      return docs.filter((d) => d.retracted_at === null && isEligible(d.audience, read));
    },

    /** Live records of the tenant, newest first, at most `limit` (what the serve cache holds). */
    liveNewest: (tenantId: string, limit: number) =>
      records.find({ tenant_id: tenantId, retracted_at: null }).sort({ created_at: -1, _id: -1 }).limit(limit).toArray(),

    /** Records one delivery of each of `ids` as a document (what older versions did; tests of the fold). */
    async recordDelivery(tenantId: string, ids: string[]): Promise<void> {
      if (ids.length === 0) return;
      await deliveries.insertOne({ _id: randomUUID(), tenant_id: tenantId, ids, at: new Date() });
    },

    /**
     * Folds the tenant's pending deliveries (Redis snapshots, then delivery documents) into
     * served_count, holding the tenant's fold lease (waiting up to `waitMs` for it). Finishes a
     * fold a dead folder left first. Answers false when the lease was busy, or when deliveries
     * remain after `maxSteps` steps.
     */
    async fold(tenantId: string, served: ServedCounter, opts: { waitMs?: number; maxSteps?: number } = {}): Promise<boolean> {
      const res = await withLease(`fold:${tenantId}`, FOLD_LEASE_MS, opts.waitMs ?? 0, async () => {
        for (const left of await folds.find({ tenant_id: tenantId }).toArray()) await applyFold(left, served);
        await foldSnapshots(tenantId, served);
        for (let step = 0; step < (opts.maxSteps ?? 20); step++) {
          if ((await foldStep(tenantId)) < FOLD_BATCH) return served.settle(tenantId);
        }
        return false;
      });
      return res?.value ?? false;
    },
  };
}

export type PromotedRepository = ReturnType<typeof createPromotedRepository>;
