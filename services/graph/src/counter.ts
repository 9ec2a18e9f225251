import { internal } from "@feeds/kit";
import type { CountRepository, Counts } from "./count-repository.js";
import type { FeedLocks } from "./feed-locks.js";
import { countSides, type CountSide, type FollowRepository } from "./follow-repository.js";

/** What edge changes did to the counts of each feed. */
export type Deltas = Map<string, Counts>;

/** The deltas of `edges` appearing (+1) or disappearing (-1). */
export function edgeDeltas(edges: readonly { source: string; target: string }[], sign: 1 | -1): Deltas {
  const deltas: Deltas = new Map();
  const add = (feed: string, side: CountSide) => {
    const d = deltas.get(feed) ?? { follower_count: 0, following_count: 0 };
    d[side] += sign;
    deltas.set(feed, d);
  };
  for (const e of edges) {
    add(e.source, "following_count");
    add(e.target, "follower_count");
  }
  return deltas;
}

/** Feeds recounted at once by one call (a batch import touches up to 200). */
const PARALLEL = 8;

/**
 * Keeps follower and following counts equal to the edges, across replicas. The invariant: the
 * counts of a feed change only under its count lock, and an edge of the feed is written either
 * under that lock, by a writer that moves the counts before letting go (`apply`), or outside it,
 * by a writer that recounts the feed from the edges afterwards (`recount`). A writer that dies in
 * between leaves its outbox record, and the relay recounts. So a recount never sees an edge whose
 * delta is still to come, and no delta lands on a count that already holds its edge.
 */
export function createCounter(deps: {
  follows: Pick<FollowRepository, "countEdges">;
  counts: Pick<CountRepository, "inc" | "set">;
  feedLocks: FeedLocks;
}) {
  const { follows, counts, feedLocks } = deps;
  const expired = () => internal(new Error("feed count locks held past half their lease"));

  /** Recounts the `sides` of one feed under its lock. */
  const recountOne = (tenantId: string, feed: string, sides: readonly CountSide[]) =>
    feedLocks.withFeeds(tenantId, [feed], async (held) => {
      const c = await follows.countEdges(tenantId, feed, sides);
      if (!held()) throw expired();
      await counts.set(tenantId, feed, c);
    });

  return {
    /**
     * Runs `write` (an edge change) holding the count locks of `feeds`, then moves their counts
     * by the deltas it answers (each for one of `feeds`). Counts stay as they were when the locks
     * were held too long: the caller's outbox record gets them recounted.
     */
    apply<T>(tenantId: string, feeds: readonly string[], write: () => Promise<{ result: T; deltas: Deltas }>): Promise<T> {
      return feedLocks.withFeeds(tenantId, feeds, async (held) => {
        const { result, deltas } = await write();
        if (!held()) throw expired();
        await Promise.all([...deltas].map(([feed, d]) => counts.inc(tenantId, feed, d)));
        return result;
      });
    },

    /** Sets the `sidesOf` each of `feeds` (both by default) from the edges, each feed under its own lock (the caller holds none). */
    async recount(tenantId: string, feeds: readonly string[], sidesOf: (feed: string) => readonly CountSide[] = () => countSides): Promise<void> {
      const todo = [...new Set(feeds)];
      const failures: unknown[] = [];
      const lane = async () => {
        for (let feed = todo.shift(); feed !== undefined; feed = todo.shift()) {
          await recountOne(tenantId, feed, sidesOf(feed)).catch((e: unknown) => failures.push(e));
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARALLEL, todo.length) }, lane));
      if (failures.length) throw failures[0];
    },
  };
}

export type Counter = ReturnType<typeof createCounter>;
