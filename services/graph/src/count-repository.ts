import type { Collection, Db, UpdateFilter } from "mongodb";
import { isDuplicateKey } from "@feeds/kit";
import { feedKeyOf } from "./follow-repository.js";

export interface CountDoc {
  _id: string; // `${tenant_id}/${feed}`
  tenant_id: string;
  feed: string; // `group:id`
  group: string;
  follower_count: number;
  following_count: number;
}

export interface Counts {
  follower_count: number;
  following_count: number;
}

const countKey = (tenantId: string, feed: string) => `${tenantId}/${feed}`;

/**
 * All MongoDB access for the follower and following counts of feeds. Every write happens under
 * the feed's count lock (`counter.ts`): FerretDB v1 runs an update as read-modify-write, so
 * `$inc`s that raced would lose increments; one at a time they are exact.
 */
export function createCountRepository(db: Db) {
  const counts: Collection<CountDoc> = db.collection<CountDoc>("follow_counts");

  /** One upsert; a first insert that raced (a lease taken over) is retried as an update. */
  async function upsert(tenantId: string, feed: string, update: (insert: Record<string, unknown>) => UpdateFilter<CountDoc>) {
    const write = () =>
      counts.updateOne({ _id: countKey(tenantId, feed) }, update({ tenant_id: tenantId, feed, group: feedKeyOf(feed).group }), { upsert: true });
    try {
      await write();
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      await write();
    }
  }

  return {
    ensureIndexes: () => counts.createIndex({ tenant_id: 1, group: 1, follower_count: -1, _id: 1 }),

    /** Moves the counts of `feed` by what one edge change did (the caller holds the feed's lock). */
    inc: (tenantId: string, feed: string, d: Counts) =>
      upsert(tenantId, feed, (insert) => ({ $inc: { follower_count: d.follower_count, following_count: d.following_count }, $setOnInsert: insert })),

    /** Sets the counts of `feed` it was given (recounted from the edges; the caller holds the feed's lock). */
    set: (tenantId: string, feed: string, c: Partial<Counts>) =>
      upsert(tenantId, feed, (insert) => ({
        $set: c,
        // A side not recounted starts at 0 on a new document.
        $setOnInsert: {
          ...insert,
          ...(c.follower_count === undefined ? { follower_count: 0 } : {}),
          ...(c.following_count === undefined ? { following_count: 0 } : {}),
        },
      })),

    /** The stored counts of each of `feeds` that has them. */
    async getMany(tenantId: string, feeds: string[]): Promise<Map<string, Counts>> {
      if (feeds.length === 0) return new Map();
      const docs = await counts.find({ _id: { $in: feeds.map((f) => countKey(tenantId, f)) }, tenant_id: tenantId }).toArray();
      return new Map(docs.map((d) => [d.feed, { follower_count: d.follower_count, following_count: d.following_count }]));
    },

    /** Follower and following counts; a feed never followed nor following has none. */
    get: (tenantId: string, feed: string) => counts.findOne({ _id: countKey(tenantId, feed) }),

    /** follower_count of each of `feeds` that has a counter. */
    async followerCounts(tenantId: string, feeds: string[]): Promise<Map<string, number>> {
      if (feeds.length === 0) return new Map();
      const docs = await counts
        .find({ tenant_id: tenantId, _id: { $in: feeds.map((f) => countKey(tenantId, f)) } }, { projection: { feed: 1, follower_count: 1 } })
        .toArray();
      return new Map(docs.map((d) => [d.feed, d.follower_count]));
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

export type CountRepository = ReturnType<typeof createCountRepository>;
