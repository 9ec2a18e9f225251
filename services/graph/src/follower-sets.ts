import { createReadCache, type RedisConn } from "@feeds/kit";
import type { FollowRepository } from "./follow-repository.js";

// The follower feeds of feeds with few followers, in Redis (kit's read cache): a fan-out of a
// typical author reads them without a MongoDB query. A feed with more than SMALL_SET followers
// is cached as "not here" and streamed from MongoDB (a fan-out must not hold a large set).
// Every edge change invalidates the feeds it touched after its write (follow-writes.ts), and the
// outbox relay again for a change whose writer died or failed there (relay.ts); the read
// cache's generations keep a reader that raced the change from storing the old set.

/** Follower sets up to this size are cached whole. */
export const SMALL_SET = 1000;
const TTL_SECONDS = 300;

export function createFollowerSets(redis: RedisConn, follows: Pick<FollowRepository, "followerFeedsUpTo">) {
  const cache = createReadCache<string[]>(redis, "followers", { encode: (v) => v, decode: (v) => v as string[] }, { ttlSeconds: TTL_SECONDS });
  return {
    /** The follower feeds of `feed` when it has at most SMALL_SET, else null (stream them). */
    async small(tenantId: string, feed: string): Promise<string[] | null> {
      const found = await cache.read(tenantId, [feed], async () => {
        const feeds = await follows.followerFeedsUpTo(tenantId, feed, SMALL_SET + 1);
        return new Map(feeds.length <= SMALL_SET ? [[feed, feeds]] : []);
      });
      return found.get(feed) ?? null;
    },
    /** After an edge change of `feeds` (either side): their next fan-out reads MongoDB again. */
    invalidate: (tenantId: string, feeds: string[]) => cache.invalidate(tenantId, feeds),
  };
}

export type FollowerSets = ReturnType<typeof createFollowerSets>;
