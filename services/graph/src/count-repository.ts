import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Db, type Filter, type WriteError } from "mongodb";
import { onceFilter, onceUpdate } from "@feeds/kit";
import { feedKeyOf } from "./follow-repository.js";

export interface CountDoc {
  _id: string; // `${tenant_id}/${feed}`
  tenant_id: string;
  feed: string; // `group:id`
  group: string;
  follower_count: number;
  following_count: number;
  /** The ids of the edge changes whose moves this document holds, until their changes are cleared. */
  applied?: string[];
}

export type CountField = "follower_count" | "following_count";

/** One count move an edge change owes: `by` on `field` of `feed`, made once for change `change`. */
export interface CountMove {
  change: string;
  feed: string;
  field: CountField;
  by: 1 | -1;
}

/** The collection of the counts (a change's targets name it). */
export const COUNTS = "follow_counts";
export const countKey = (tenantId: string, feed: string) => `${tenantId}/${feed}`;

/** The positions of a bulk write's statements that failed on a duplicate key; null when another error is among them. */
function duplicates(e: unknown): number[] | null {
  if (!(e instanceof MongoBulkWriteError)) return null;
  const errors = ([] as WriteError[]).concat(e.writeErrors);
  return errors.every((w) => w.code === 11000) ? errors.map((w) => w.index) : null;
}

/**
 * All MongoDB access for the follower and following counts of feeds. A count moves only by a
 * replayable `$inc` of one edge change (`apply`): the count document remembers the change's id in
 * the same atomic update, so a replay (the outbox relay, an unfollow finishing a follow whose
 * writer died) moves nothing twice.
 */
export function createCountRepository(db: Db) {
  const counts: Collection<CountDoc> = db.collection<CountDoc>(COUNTS);

  /**
   * One statement per count document: the sum of its moves, made only while none of their
   * changes is applied to it (a document takes all of a statement's changes at once, so "none"
   * is "this statement never ran"). With one move this is kit's `onceFilter`/`onceUpdate`.
   */
  function statements(tenantId: string, moves: readonly CountMove[]): AnyBulkWriteOperation<CountDoc>[] {
    const byFeed = new Map<string, CountMove[]>();
    for (const m of moves) byFeed.set(m.feed, [...(byFeed.get(m.feed) ?? []), m]);
    return [...byFeed].map(([feed, ms]) => {
      const inc: Partial<Record<CountField, number>> = {};
      for (const m of ms) inc[m.field] = (inc[m.field] ?? 0) + m.by;
      const ids = ms.map((m) => m.change);
      const missing = (["follower_count", "following_count"] as const).filter((f) => inc[f] === undefined);
      const insert = { tenant_id: tenantId, feed, group: feedKeyOf(feed).group, ...Object.fromEntries(missing.map((f) => [f, 0])) };
      const _id = countKey(tenantId, feed);
      return {
        updateOne:
          ids.length === 1
            ? { filter: onceFilter<CountDoc>({ _id }, ids[0] as string), update: onceUpdate<CountDoc>({ $inc: inc, $setOnInsert: insert }, ids[0] as string), upsert: true }
            : { filter: { _id, applied: { $nin: ids } }, update: { $inc: inc, $setOnInsert: insert, $push: { applied: { $each: ids } } }, upsert: true },
      };
    });
  }

  /** Matches the document of statement `st` once it holds every change id the statement records. */
  function madeFilter(st: AnyBulkWriteOperation<CountDoc>): Filter<CountDoc> {
    const { filter, update } = (st as { updateOne: { filter: Filter<CountDoc>; update: { $push: { applied: string | { $each: string[] } } } } }).updateOne;
    const pushed = update.$push.applied;
    return { _id: filter._id, applied: { $all: typeof pushed === "string" ? [pushed] : pushed.$each } };
  }

  return {
    ensureIndexes: () => counts.createIndex({ tenant_id: 1, group: 1, follower_count: -1, _id: 1 }),

    /**
     * Makes each move once, all in one command (one statement per count document). A statement
     * whose upsert met a duplicate key either raced another first insert of the document or was
     * made already (its document holds the changes' ids, so its filter matches nothing and the
     * upsert collides with the document itself); which one, the document tells: those made are
     * done, the others are tried again, now as updates.
     */
    async apply(tenantId: string, moves: readonly CountMove[]): Promise<void> {
      let todo = statements(tenantId, moves);
      for (let attempt = 0; todo.length; attempt++) {
        try {
          await counts.bulkWrite(todo, { ordered: false });
          return;
        } catch (e) {
          const dup = duplicates(e);
          if (!dup || attempt >= 4) throw e;
          const again = dup.flatMap((i) => todo[i] ?? []);
          const made = await Promise.all(again.map((st) => counts.findOne(madeFilter(st), { projection: { _id: 1 } })));
          todo = again.filter((_, i) => made[i] === null);
        }
      }
    },

    /** Whether change `changeId`'s moves are in the counts of every one of `feeds` (their documents hold its id). */
    async hold(tenantId: string, feeds: readonly string[], changeId: string): Promise<boolean> {
      const n = await counts.countDocuments({ _id: { $in: feeds.map((f) => countKey(tenantId, f)) }, applied: changeId });
      return n === feeds.length;
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
