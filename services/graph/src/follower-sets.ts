import { createReadCache, type RedisConn } from "@feeds/kit";
import type { FollowRepository } from "./follow-repository.js";

// The follower feeds of a feed, for its fan-out. A feed with few followers has them cached in
// Redis (kit's read cache): a fan-out of a typical author reads them without a MongoDB query. Any
// other feed's fan-out makes one pass over MongoDB; a pass that finds at most SMALL_SET followers
// fills the cache with them, a larger one fills it with "not here" (a fan-out must not hold a
// large set, so the next pass streams again without collecting). One pass, never a sized read
// first: a limited read of SMALL_SET + 1 edges of a 10,000-follower feed cost 47–80 ms before the
// first chunk could go out.
// Every edge change invalidates the feeds it touched after its write (follow-writes.ts), and the
// outbox relay's finish again for a change whose writer died or failed there; the read cache's
// generations keep a pass that raced the change from storing the old set.

/** Follower sets up to this size are cached whole. */
export const SMALL_SET = 1000;
const TTL_SECONDS = 300;

export function createFollowerSets(redis: RedisConn, follows: Pick<FollowRepository, "followerFeeds">) {
  const cache = createReadCache<string[]>(redis, "followers", { encode: (v) => v, decode: (v) => v as string[] }, { ttlSeconds: TTL_SECONDS });
  return {
    /** Every follower feed of `feed`, `size` at a time (the last batch may be smaller), in no particular order. */
    async *stream(tenantId: string, feed: string, size: number): AsyncGenerator<string[]> {
      const cached = await cache.lookup(tenantId, feed);
      if (cached.hit && cached.value) {
        for (let i = 0; i < cached.value.length; i += size) yield cached.value.slice(i, i + size);
        return;
      }
      // Collected only while it may still be small, and stored only by a pass that read it all.
      let collected: string[] | null = cached.hit ? null : [];
      for await (const feeds of follows.followerFeeds(tenantId, feed, size)) {
        if (collected) collected = collected.length + feeds.length <= SMALL_SET ? collected.concat(feeds) : null;
        yield feeds;
      }
      if (!cached.hit) await cached.fill(collected ?? undefined);
    },
    /** After an edge change of `feeds` (either side): their next fan-out reads MongoDB again. */
    invalidate: (tenantId: string, feeds: string[]) => cache.invalidate(tenantId, feeds),
  };
}

export type FollowerSets = ReturnType<typeof createFollowerSets>;
