import { MongoBulkWriteError, type Collection, type Db, type WriteError } from "mongodb";
import { isDuplicateKey } from "@feeds/kit";

/** A feed as the graph stores it: `group:id` (groups and ids never contain `:`). */
export interface FeedKey {
  group: string;
  id: string;
}

export interface FollowDoc {
  _id: string; // `${tenant_id}/${source_feed}/${target_feed}`: one edge per pair
  tenant_id: string;
  source_feed: string; // `group:id`
  target_feed: string; // `group:id`
  created_at: Date;
}

/** Where a keyset page resumes: the last row's created_at and its edge (the `_id` without the tenant). */
export interface EdgeCursor {
  created_at: Date;
  edge: string;
}

/** The two counts of a feed. */
export const countSides = ["follower_count", "following_count"] as const;
export type CountSide = (typeof countSides)[number];

/** What a batch import did with one edge. */
export type EdgeOutcome = "created" | "existed" | "failed";

export const feedString = (f: FeedKey) => `${f.group}:${f.id}`;
export function feedKeyOf(s: string): FeedKey {
  const i = s.indexOf(":");
  return { group: s.slice(0, i), id: s.slice(i + 1) };
}
export const edgeOf = (source: string, target: string) => `${source}/${target}`;
const edgeKey = (tenantId: string, edge: string) => `${tenantId}/${edge}`;
/** The edge part of a stored `_id` (what cursors carry: no tenant inside). */
export const edgeOfDoc = (d: FollowDoc) => d._id.slice(d.tenant_id.length + 1);

/**
 * All MongoDB access for follow edges; every method takes the tenant first. Edge writes change
 * no counter: `follow-writes.ts` and `counter.ts` count what an edge change did.
 */
export function createFollowRepository(db: Db) {
  const follows: Collection<FollowDoc> = db.collection<FollowDoc>("follows");

  /** Keyset page of one side of the graph, newest first: (created_at desc, _id desc). */
  function page(side: "source_feed" | "target_feed", tenantId: string, feed: string, limit: number, after: EdgeCursor | null) {
    const base = { tenant_id: tenantId, [side]: feed };
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

    /**
     * Creates the edge with `createdAt` (chosen before the write, so that its event can be
     * recorded first); a duplicate (also a concurrent one) answers the existing edge.
     */
    async insert(tenantId: string, source: string, target: string, createdAt = new Date()): Promise<{ doc: FollowDoc; created: boolean }> {
      const doc: FollowDoc = {
        _id: edgeKey(tenantId, edgeOf(source, target)),
        tenant_id: tenantId,
        source_feed: source,
        target_feed: target,
        created_at: createdAt,
      };
      // Two rounds: an existing edge may be removed between our insert and our read.
      for (let attempt = 0; ; attempt++) {
        try {
          await follows.insertOne(doc);
        } catch (e) {
          if (!isDuplicateKey(e)) throw e;
          const existing = await follows.findOne({ _id: doc._id });
          if (existing) return { doc: existing, created: false };
          if (attempt < 1) continue;
          throw e;
        }
        return { doc, created: true };
      }
    },

    /**
     * Creates many edges in one round trip (batch import); answers per input edge whether it was
     * created, already existed (also a repeat within the input) or failed.
     */
    async insertMany(tenantId: string, edges: { source: string; target: string }[]): Promise<EdgeOutcome[]> {
      const now = new Date();
      const firstOf = new Map<string, number>();
      const docs: FollowDoc[] = [];
      const outcome = edges.map((e, i): EdgeOutcome => {
        const _id = edgeKey(tenantId, edgeOf(e.source, e.target));
        if (firstOf.has(_id)) return "existed";
        firstOf.set(_id, i);
        docs.push({ _id, tenant_id: tenantId, source_feed: e.source, target_feed: e.target, created_at: now });
        return "created";
      });
      const indexOf = (docIndex: number) => firstOf.get(docs[docIndex]?._id ?? "") ?? -1;
      if (docs.length) {
        try {
          await follows.insertMany(docs, { ordered: false });
        } catch (e) {
          if (!(e instanceof MongoBulkWriteError)) throw e;
          const errors: WriteError[] = ([] as WriteError[]).concat(e.writeErrors);
          for (const w of errors) {
            const i = indexOf(w.index);
            if (i >= 0) outcome[i] = w.code === 11000 ? "existed" : "failed";
          }
        }
      }
      return outcome;
    },

    /** Removes the edge; answers whether there was one (only one of concurrent removals sees it). */
    async remove(tenantId: string, source: string, target: string): Promise<boolean> {
      const { deletedCount } = await follows.deleteOne({ _id: edgeKey(tenantId, edgeOf(source, target)) });
      return deletedCount === 1;
    },

    /** The edge as it is now, or null. */
    find: (tenantId: string, source: string, target: string) => follows.findOne({ _id: edgeKey(tenantId, edgeOf(source, target)) }),

    /** Whether the edge exists now. */
    exists: async (tenantId: string, source: string, target: string) =>
      (await follows.findOne({ _id: edgeKey(tenantId, edgeOf(source, target)) }, { projection: { _id: 1 } })) !== null,

    /**
     * How many edges end at (follower_count) and start from (following_count) `feed`, counted
     * from the edges themselves; only the sides asked for (a count reads every edge on FerretDB).
     */
    async countEdges(tenantId: string, feed: string, sides: readonly CountSide[] = countSides): Promise<Partial<Record<CountSide, number>>> {
      const field = { follower_count: "target_feed", following_count: "source_feed" } as const;
      const counted = await Promise.all(sides.map((side) => follows.countDocuments({ tenant_id: tenantId, [field[side]]: feed })));
      return Object.fromEntries(sides.map((side, i) => [side, counted[i]]));
    },

    /** Who `feed` follows. */
    followsOf: (tenantId: string, feed: string, limit: number, after: EdgeCursor | null) =>
      page("source_feed", tenantId, feed, limit, after),
    /** Who follows `feed`. */
    followersOf: (tenantId: string, feed: string, limit: number, after: EdgeCursor | null) =>
      page("target_feed", tenantId, feed, limit, after),

    /**
     * Every feed that follows `feed`, `batchSize` at a time, over one cursor: one index scan on
     * MongoDB (keyset pages would repeat FerretDB's fetch and sort of the whole set for every
     * page). Unsorted, so that the first batch arrives before the whole set is read; callers
     * must not rely on the order.
     */
    async *followerFeeds(tenantId: string, feed: string, batchSize: number): AsyncGenerator<string[]> {
      const cursor = follows.find({ tenant_id: tenantId, target_feed: feed }, { projection: { source_feed: 1 }, batchSize });
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
        .find({ tenant_id: tenantId, source_feed: feed }, { projection: { target_feed: 1 } })
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
          { tenant_id: tenantId, source_feed: { $in: sources }, target_feed: { $regex: `^${group}:` } },
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
          { _id: { $in: targets.map((t) => edgeKey(tenantId, edgeOf(source, t))) }, tenant_id: tenantId, source_feed: source },
          { projection: { target_feed: 1 } },
        )
        .toArray();
      return new Set(docs.map((d) => d.target_feed));
    },
  };
}

export type FollowRepository = ReturnType<typeof createFollowRepository>;
