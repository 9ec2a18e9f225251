import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import { createInsertBatcher, DocumentWriteError, onceFilter, onceUpdate, uuidFrom, type CountSignal, type OutboxFields, type PendingChange } from "@feeds/kit";

export interface ActivityDoc extends OutboxFields {
  _id: string; // activity id (uuid; name-based from the tenant and the (foreign_id, time) identity when it has one)
  tenant_id: string;
  actor: string;
  verb: string;
  object: string;
  target: string | null;
  foreign_id: string | null;
  time: Date;
  custom_json: string;
  origin_feed: string;
  refs: string[];
  reaction_counts: Record<string, number>;
  version: number;
  edited_at: Date | null;
  deleted_at: Date | null;
  created_at: Date;
  /** Batch imports fan out without live head keys. */
  batch: boolean;
  /** The kinds `reaction_counts` holds, as a set: the bound of kinds is a condition on its length. */
  reaction_kinds?: string[];
  /** Reaction changes applied and not yet cleared by the engagement service (kit's outbox). */
  applied?: string[];
}

/** What a pending change of an activity does (the relay's `finish` replays it). */
export type ActivityChangeKind = "add" | "update" | "delete";

/** The outbox operators of one update (kit's `outbox.forUpdate`). */
export interface PendingUpdate {
  $push: { outbox: PendingChange };
  $set: { outbox_pending: true };
}

/**
 * The id of the activity with this (foreign_id, time) identity: a name-based UUID of the tenant and
 * the pair, so that every write of one identity inserts the same `_id` and a duplicate is a
 * duplicate key (a deleted activity keeps its tombstone, so its identity stays burned).
 */
export const identityId = (tenantId: string, foreignId: string, time: Date): string =>
  uuidFrom("activity", tenantId, foreignId, String(time.getTime()));

/** The outbox fields of a stored activity left out of what reads answer. */
const PLAIN = { projection: { outbox: 0, outbox_pending: 0 } } as const;

/** `doc` without its pending changes (what reads, the cache and answers see). */
export function plain<T extends ActivityDoc | null>(doc: T): T {
  if (!doc) return doc;
  // fanout_pending: the outbox mark of activities stored before the outbox kept their changes.
  const { outbox: _o, outbox_pending: _p, fanout_pending: _f, ...rest } = doc as ActivityDoc & { fanout_pending?: unknown };
  return rest as T;
}

/** All MongoDB access for activities; every method takes the tenant. */
export function createActivityRepository(db: Db) {
  const activities: Collection<ActivityDoc> = db.collection<ActivityDoc>("activities");
  // Concurrent writes' inserts share commands under load (kit's insert batcher).
  const inserts = createInsertBatcher(activities);
  return {
    /** The collection's name, for the outbox. */
    collection: activities.collectionName,
    async ensureIndexes() {
      await activities.createIndex({ tenant_id: 1, time: -1, _id: -1 });
      await activities.createIndex({ tenant_id: 1, origin_feed: 1, time: -1, _id: -1 });
    },
    /** Stores `doc`; an `_id` that exists already throws a duplicate-key error (code 11000). */
    async insert(doc: ActivityDoc): Promise<void> {
      const { duplicates } = await inserts.insert([doc]);
      if (duplicates.length) throw new DocumentWriteError(`activity ${doc._id} exists`, 11000);
    },
    /** Activities of the tenant, tombstones included (the console's count). */
    count: (tenantId: string) => activities.countDocuments({ tenant_id: tenantId }),
    get: (tenantId: string, id: string) => activities.findOne({ _id: id, tenant_id: tenantId }, PLAIN),
    /** The stored document with its pending changes (a duplicate add asks whether its add is pending). */
    getWithOutbox: (tenantId: string, id: string) => activities.findOne({ _id: id, tenant_id: tenantId }),
    getMany: (tenantId: string, ids: string[]) =>
      ids.length ? activities.find({ _id: { $in: ids }, tenant_id: tenantId }, PLAIN).toArray() : Promise.resolve([]),
    /** Compare-and-set on version: answers the new document, or null when the version moved. */
    replaceIfVersion(doc: ActivityDoc, expectedVersion: number, set: Partial<ActivityDoc>) {
      return activities.findOneAndUpdate(
        { _id: doc._id, tenant_id: doc.tenant_id, version: expectedVersion },
        { $set: set },
        { returnDocument: "after" },
      );
    },
    /**
     * One reaction change, made once (`changeId` joins `applied` in the same atomic update) while
     * the activity is live: `reaction_counts.<kind>` and `version` move by `delta` (+1 or -1). A +1
     * of a kind the activity does not carry matches only while it carries fewer than `maxKinds`
     * kinds; a -1 that leaves no reaction of the kind takes the kind out. Answers the document
     * after, or null when nothing matched (not live, applied already, or no slot for the kind).
     */
    async changeReactionCount(tenantId: string, id: string, kind: string, delta: 1 | -1, changeId: string, maxKinds: number) {
      const live = { _id: id, tenant_id: tenantId, deleted_at: null };
      const count = `reaction_counts.${kind}`;
      const once = (filter: Record<string, unknown>, update: Record<string, unknown>) =>
        activities.findOneAndUpdate(onceFilter(filter as Filter<ActivityDoc>, changeId), onceUpdate(update as UpdateFilter<ActivityDoc>, changeId), {
          returnDocument: "after",
        });
      if (delta > 0) {
        const slot = { $or: [{ reaction_kinds: kind }, { [`reaction_kinds.${maxKinds - 1}`]: { $exists: false } }] };
        return plain(await once({ ...live, ...slot }, { $inc: { [count]: 1, version: 1 }, $addToSet: { reaction_kinds: kind } }));
      }
      // Two forms, each one atomic update: no reader ever sees a kind counted 0.
      const stays = await once({ ...live, [count]: { $gt: 1 } }, { $inc: { [count]: -1, version: 1 } });
      if (stays) return plain(stays);
      const last = { $or: [{ [count]: { $lte: 1 } }, { [count]: { $exists: false } }] };
      return plain(await once({ ...live, ...last }, { $unset: { [count]: "" }, $pull: { reaction_kinds: kind }, $inc: { version: 1 } }));
    },
    /** Forgets applied reaction changes (`changeReactionCount`) whose changes nothing replays any more. */
    async pullApplied(tenantId: string, items: { id: string; changes: string[] }[]): Promise<void> {
      if (!items.length) return;
      await activities.bulkWrite(
        items.map((it) => ({ updateOne: { filter: { _id: it.id, tenant_id: tenantId }, update: { $pullAll: { applied: it.changes } } } })),
        { ordered: false },
      );
    },
    /**
     * A change of a live activity at `expectedVersion`, recorded with its pending change (`pending`,
     * kit's `outbox.forUpdate`) in the same single-document update. Answers the new document, or
     * null when the activity is at another version, deleted, or not the tenant's: of racing
     * writers that read the same version, exactly one matches.
     */
    async updateIfVersion(doc: Pick<ActivityDoc, "_id" | "tenant_id">, expectedVersion: number, set: Partial<ActivityDoc>, pending: PendingUpdate) {
      return plain(
        await activities.findOneAndUpdate(
          { _id: doc._id, tenant_id: doc.tenant_id, version: expectedVersion, deleted_at: null },
          { $set: { ...set, ...pending.$set }, $push: pending.$push },
          { returnDocument: "after" },
        ),
      );
    },
    /** The newest live activities a feed posted itself (follow copies them). */
    newestOf: (tenantId: string, originFeed: string, limit: number) =>
      activities
        .find({ tenant_id: tenantId, origin_feed: originFeed, deleted_at: null }, PLAIN)
        .sort({ time: -1, _id: -1 })
        .limit(limit)
        .toArray(),
    /** Inspector: every activity of the tenant, tombstones included, (time desc, id desc). */
    page(tenantId: string, limit: number, after: { time: Date; id: string } | null) {
      const filter = after
        ? { tenant_id: tenantId, $or: [{ time: { $lt: after.time } }, { time: after.time, _id: { $lt: after.id } }] }
        : { tenant_id: tenantId };
      return activities.find(filter, PLAIN).sort({ time: -1, _id: -1 }).limit(limit + 1).toArray();
    },
  };
}

export type ActivityRepository = ReturnType<typeof createActivityRepository>;

/**
 * The repository moving the console's activity signal after each compare-and-set (patch, delete,
 * reaction counts). Inserts move it in the write path, beside the origin entry's write.
 */
export function withConsoleSignal(repo: ActivityRepository, signal: CountSignal): ActivityRepository {
  return {
    ...repo,
    async replaceIfVersion(doc, expectedVersion, set) {
      const res = await repo.replaceIfVersion(doc, expectedVersion, set);
      if (res) await signal.bump(doc.tenant_id, 0);
      return res;
    },
    async updateIfVersion(doc, expectedVersion, set, pending) {
      const res = await repo.updateIfVersion(doc, expectedVersion, set, pending);
      if (res) await signal.bump(doc.tenant_id, 0);
      return res;
    },
  };
}
