import { createReadCache, type RedisConn } from "@feeds/kit";
import type { ReactionRepository } from "./reaction-repository.js";

/** Entries outlive a warm session of feed reads; MongoDB stays the truth. */
const TTL_SECONDS = 600;

/**
 * The kinds a user reacted with, per activity, for the feed read's `own_reactions`: from Redis
 * per (tenant, activity, user), absent ones cached too, filled from MongoDB under the read
 * cache's generation check (`kit/src/read-cache.ts`). Every react and unreact invalidates its
 * entry before it answers, so a read after it sees it.
 */
export function createOwnReactions(deps: { reactions: Pick<ReactionRepository, "ofUser">; redis: RedisConn }) {
  const cache = createReadCache<string[]>(deps.redis, "own-reactions", { encode: (v) => v, decode: (v) => v as string[] }, { ttlSeconds: TTL_SECONDS });
  const entry = (activityId: string, userId: string) => `${activityId}:${userId}`;
  const activityOf = (id: string) => id.slice(0, id.indexOf(":"));

  return {
    /** Activity id → sorted kinds; activities without reactions are absent. */
    async kindsOf(tenantId: string, userId: string, activityIds: string[]): Promise<Map<string, string[]>> {
      const found = await cache.read(tenantId, activityIds.map((a) => entry(a, userId)), async (missing) => {
        const out = new Map<string, string[]>();
        for (const r of await deps.reactions.ofUser(tenantId, userId, missing.map(activityOf))) {
          const id = entry(r.activity_id, userId);
          const kinds = out.get(id) ?? [];
          if (!kinds.includes(r.kind)) kinds.push(r.kind);
          out.set(id, kinds);
        }
        for (const kinds of out.values()) kinds.sort();
        return out;
      });
      return new Map([...found].map(([id, kinds]) => [activityOf(id), kinds]));
    },
    /** After a react or unreact (throws when Redis fails: the caller must not answer success). */
    invalidate: (tenantId: string, userId: string, activityId: string) => cache.invalidate(tenantId, [entry(activityId, userId)]),
  };
}

export type OwnReactions = ReturnType<typeof createOwnReactions>;
