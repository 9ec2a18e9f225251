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

export interface CountDoc {
  _id: string; // `${tenant_id}/${feed}`
  tenant_id: string;
  feed: string; // `group:id`
  group: string;
  follower_count: number;
  following_count: number;
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
const edgeKey = (tenantId: string, edge: string) => `${tenantId}/${edge}`;
const countKey = (tenantId: string, feed: string) => `${tenantId}/${feed}`;
/** The edge part of a stored `_id` (what cursors carry: no tenant inside). */
export const edgeOfDoc = (d: FollowDoc) => d._id.slice(d.tenant_id.length + 1);

/** Runs each call after every earlier call with the same key has settled (in this process). */
function keyedQueue() {
  const tails = new Map<string, Promise<void>>();
  return <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const run = (tails.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
}

/** All MongoDB access for follow edges and their counts; every method takes the tenant first. */
export function createFollowRepository(db: Db) {
  const follows: Collection<FollowDoc> = db.collection<FollowDoc>("follows");
  const counts: Collection<CountDoc> = db.collection<CountDoc>("follow_counts");

  const serialized = keyedQueue();

  /**
   * One `$inc` upsert; a concurrent first insert of the same counter is retried as an update.
   * FerretDB v1 runs an update as read-modify-write, so two concurrent `$inc` of one counter can
   * lose one: this process queues the updates of each counter (MongoDB's `$inc` is atomic anyway).
   */
  function bump(tenantId: string, feed: string, inc: { follower_count: number; following_count: number }) {
    const run = () =>
      counts.updateOne(
        { _id: countKey(tenantId, feed) },
        { $inc: inc, $setOnInsert: { tenant_id: tenantId, feed, group: feedKeyOf(feed).group } },
        { upsert: true },
      );
    return serialized(countKey(tenantId, feed), async () => {
      try {
        await run();
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        await run();
      }
    });
  }

  /** Counters move only when an edge really appeared or disappeared. */
  const moveCounts = (tenantId: string, source: string, target: string, delta: 1 | -1) =>
    Promise.all([
      bump(tenantId, source, { follower_count: 0, following_count: delta }),
      bump(tenantId, target, { follower_count: delta, following_count: 0 }),
    ]);

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
        counts.createIndex({ tenant_id: 1, group: 1, follower_count: -1, _id: 1 }),
      ]);
    },

    /** Creates the edge; a duplicate (also a concurrent one) answers the existing edge. */
    async create(tenantId: string, source: string, target: string): Promise<{ doc: FollowDoc; created: boolean }> {
      const doc: FollowDoc = {
        _id: edgeKey(tenantId, edgeOf(source, target)),
        tenant_id: tenantId,
        source_feed: source,
        target_feed: target,
        created_at: new Date(),
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
        await moveCounts(tenantId, source, target, 1);
        return { doc, created: true };
      }
    },

    /**
     * Creates many edges in one round trip (batch import); answers per input edge whether it was
     * created, already existed (also a repeat within the input) or failed. Counters move once per feed.
     */
    async createMany(tenantId: string, edges: { source: string; target: string }[]): Promise<EdgeOutcome[]> {
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
      const deltas = new Map<string, { follower_count: number; following_count: number }>();
      const add = (feed: string, follower: number, following: number) => {
        const d = deltas.get(feed) ?? { follower_count: 0, following_count: 0 };
        deltas.set(feed, { follower_count: d.follower_count + follower, following_count: d.following_count + following });
      };
      edges.forEach((e, i) => {
        if (outcome[i] !== "created") return;
        add(e.source, 0, 1);
        add(e.target, 1, 0);
      });
      await Promise.all([...deltas].map(([feed, inc]) => bump(tenantId, feed, inc)));
      return outcome;
    },

    /** Removes the edge; answers whether there was one (only one of concurrent removals sees it). */
    async remove(tenantId: string, source: string, target: string): Promise<boolean> {
      const { deletedCount } = await follows.deleteOne({ _id: edgeKey(tenantId, edgeOf(source, target)) });
      if (deletedCount !== 1) return false;
      await moveCounts(tenantId, source, target, -1);
      return true;
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

    /** Follower and following counts; a feed never followed nor following has none. */
    counts: (tenantId: string, feed: string) => counts.findOne({ _id: countKey(tenantId, feed) }),

    /** follower_count of each of `feeds` that has a counter. */
    async followerCounts(tenantId: string, feeds: string[]): Promise<Map<string, number>> {
      if (feeds.length === 0) return new Map();
      const docs = await counts
        .find({ tenant_id: tenantId, _id: { $in: feeds.map((f) => countKey(tenantId, f)) } }, { projection: { feed: 1, follower_count: 1 } })
        .toArray();
      return new Map(docs.map((d) => [d.feed, d.follower_count]));
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

    /** The most followed feeds of `group`, by follower_count desc then id asc (followed ones only). */
    async popular(tenantId: string, group: string, max: number): Promise<{ feed: string; follower_count: number }[]> {
      const docs = await counts
        .find({ tenant_id: tenantId, group, follower_count: { $gt: 0 } }, { projection: { feed: 1, follower_count: 1 } })
        .sort({ follower_count: -1, _id: 1 })
        .limit(max)
        .toArray();
      return docs.map((d) => ({ feed: d.feed, follower_count: d.follower_count }));
    },
  };
}

export type FollowRepository = ReturnType<typeof createFollowRepository>;
