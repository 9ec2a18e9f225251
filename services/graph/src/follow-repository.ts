import { MongoBulkWriteError, type Collection, type Db, type UpdateFilter, type WriteError } from "mongodb";
import { isDuplicateKey, type OutboxFields } from "@feeds/kit";

/** A feed as the graph stores it: `group:id` (groups and ids never contain `:`). */
export interface FeedKey {
  group: string;
  id: string;
}

export interface FollowDoc extends OutboxFields {
  _id: string; // `${tenant_id}/${source_feed}/${target_feed}`: one edge per pair
  tenant_id: string;
  source_feed: string; // `group:id`
  target_feed: string; // `group:id`
  created_at: Date;
  /** The id of the unfollow whose change is pending on the edge: the edge goes once its counts moved. */
  removing?: string;
  /** The copy limit of the edge's last follow (a removal that raced a new follow copies again with it). */
  copy_limit?: number;
}

/** Where a keyset page resumes: the last row's created_at and its edge (the `_id` without the tenant). */
export interface EdgeCursor {
  created_at: Date;
  edge: string;
}

/** What a batch import did with one edge. */
export type EdgeOutcome = "created" | "existed" | "failed";

export const feedString = (f: FeedKey) => `${f.group}:${f.id}`;
export function feedKeyOf(s: string): FeedKey {
  const i = s.indexOf(":");
  return { group: s.slice(0, i), id: s.slice(i + 1) };
}
export const edgeOf = (source: string, target: string) => `${source}/${target}`;
export const edgeKey = (tenantId: string, edge: string) => `${tenantId}/${edge}`;
/** Edges that are not being removed: every read shows only these (a marked edge is gone, its document waits for its messages). */
const live = { removing: { $exists: false } } as const;

/** The edge part of a stored `_id` (what cursors carry: no tenant inside). */
export const edgeOfDoc = (d: FollowDoc) => d._id.slice(d.tenant_id.length + 1);

/**
 * All MongoDB access for follow edges. Edge writes change no count: `follow-writes.ts` moves the
 * counts of what an edge change did, through the change it records on the edge.
 */
export function createFollowRepository(db: Db) {
  const follows: Collection<FollowDoc> = db.collection<FollowDoc>("follows");

  /** Keyset page of one side of the graph, newest first: (created_at desc, _id desc). */
  function page(side: "source_feed" | "target_feed", tenantId: string, feed: string, limit: number, after: EdgeCursor | null) {
    const base = { tenant_id: tenantId, [side]: feed, ...live };
    const filter = after
      ? {
          ...base,
          $or: [
            { created_at: { $lt: after.created_at } },
            { created_at: after.created_at, _id: { $lt: edgeKey(tenantId, after.edge) } },
          ],
        }
      : base;
    return follows.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray();
  }

  return {
    async ensureIndexes() {
      await Promise.all([
        follows.createIndex({ tenant_id: 1, source_feed: 1, created_at: -1, _id: -1 }),
        follows.createIndex({ tenant_id: 1, target_feed: 1, created_at: -1, _id: -1 }),
      ]);
    },

    /** Inserts the edge (with its pending change); false when the pair has an edge already (also a concurrent one). */
    async insert(doc: FollowDoc): Promise<boolean> {
      try {
        await follows.insertOne(doc);
        return true;
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
    },

    /**
     * Inserts many edges in one round trip (batch import); answers per doc whether it was created,
     * already existed or failed.
     */
    async insertMany(docs: FollowDoc[]): Promise<EdgeOutcome[]> {
      const outcome = docs.map((): EdgeOutcome => "created");
      if (docs.length) {
        try {
          await follows.insertMany(docs, { ordered: false });
        } catch (e) {
          if (!(e instanceof MongoBulkWriteError)) throw e;
          for (const w of ([] as WriteError[]).concat(e.writeErrors)) outcome[w.index] = w.code === 11000 ? "existed" : "failed";
        }
      }
      return outcome;
    },

    /** The edge as it is now, or null. */
    find: (id: string) => follows.findOne({ _id: id }),

    /** Records `update` (a pending change) on the edge unless it is being removed; answers the edge after it, or null. */
    recordOnLive: (id: string, update: UpdateFilter<FollowDoc>) =>
      follows.findOneAndUpdate({ _id: id, removing: { $exists: false } }, update, { returnDocument: "after" }),

    /**
     * Marks the edge as being removed by change `changeId` (recorded by `update`), unless another
     * removal has it: only one of concurrent unfollows gets the edge (as it was before).
     */
    markRemoval: (id: string, changeId: string, update: UpdateFilter<FollowDoc>) =>
      follows.findOneAndUpdate({ _id: id, removing: { $exists: false } }, { ...update, $set: { ...(update.$set ?? {}), removing: changeId } }, { returnDocument: "before" }),

    /** Deletes the edge marked by removal `changeId`. */
    deleteMarked: (id: string, changeId: string) => follows.deleteOne({ _id: id, removing: changeId }),

    /** Whether change `changeId` is still pending on the edge. */
    pending: async (id: string, changeId: string) => (await follows.findOne({ _id: id, "outbox.id": changeId }, { projection: { _id: 1 } })) !== null,

    /** The edge now, not being removed, with its copy limit; null when there is none (the history worker). */
    live: (tenantId: string, source: string, target: string) =>
      follows.findOne({ _id: edgeKey(tenantId, edgeOf(source, target)), ...live }, { projection: { _id: 1, copy_limit: 1 } }),

    /** Who `feed` follows. */
    followsOf: (tenantId: string, feed: string, limit: number, after: EdgeCursor | null) =>
      page("source_feed", tenantId, feed, limit, after),
    /** Who follows `feed`. */
    followersOf: (tenantId: string, feed: string, limit: number, after: EdgeCursor | null) =>
      page("target_feed", tenantId, feed, limit, after),

    /**
     * Every feed that follows `feed`, `batchSize` at a time, over one cursor: one index scan
     * (keyset pages would repeat the fetch and sort of the whole set for every page). Unsorted, so that the first batch arrives before the whole set is read; callers
     * must not rely on the order.
     */
    async *followerFeeds(tenantId: string, feed: string, batchSize: number): AsyncGenerator<string[]> {
      const cursor = follows.find({ tenant_id: tenantId, target_feed: feed, ...live }, { projection: { source_feed: 1 }, batchSize });
      let batch: string[] = [];
      try {
        for await (const d of cursor) {
          batch.push(d.source_feed);
          if (batch.length === batchSize) {
            yield batch;
            batch = [];
          }
        }
        if (batch.length) yield batch;
      } finally {
        await cursor.close();
      }
    },

    /** The newest `max` feeds `feed` follows. */
    async targetsOf(tenantId: string, feed: string, max: number): Promise<string[]> {
      const docs = await follows
        .find({ tenant_id: tenantId, source_feed: feed, ...live }, { projection: { target_feed: 1 } })
        .sort({ created_at: -1, _id: -1 })
        .limit(max)
        .toArray();
      return docs.map((d) => d.target_feed);
    },

    /** At most `max` edges from any of `sources` to a feed of `group`. */
    async edgesFrom(tenantId: string, sources: string[], group: string, max: number) {
      if (sources.length === 0) return [];
      return follows
        .find(
          { tenant_id: tenantId, source_feed: { $in: sources }, target_feed: { $regex: `^${group}:` }, ...live },
          { projection: { _id: 0, source_feed: 1, target_feed: 1 } },
        )
        .limit(max)
        .toArray() as Promise<{ source_feed: string; target_feed: string }[]>;
    },

    /** Which of `targets` `source` follows (exact, however many edges it has). */
    async followedAmong(tenantId: string, source: string, targets: string[]): Promise<Set<string>> {
      if (targets.length === 0) return new Set();
      const docs = await follows
        .find(
          { _id: { $in: targets.map((t) => edgeKey(tenantId, edgeOf(source, t))) }, tenant_id: tenantId, source_feed: source, ...live },
          { projection: { target_feed: 1 } },
        )
        .toArray();
      return new Set(docs.map((d) => d.target_feed));
    },
  };
}

export type FollowRepository = ReturnType<typeof createFollowRepository>;
