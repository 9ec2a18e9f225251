import type { Collection, Db } from "mongodb";
import { createReadCache, isReactionKind, limits, validationFailed, type RedisConn } from "@feeds/kit";

interface KindsDoc {
  _id: string; // tenant id
  tenant_id: string;
  /** In the order declared; never empty (clearing deletes the record). */
  kinds: string[];
  updated_at: Date;
}

/** Entries outlive a burst of reactions by far; a PUT invalidates them on every replica at once. */
const TTL_SECONDS = 600;
/** The one cache entry of a tenant (the read cache keys entries by tenant and id). */
const ENTRY = "declared";

/** `kinds` checked: at most the per-activity bound, each a reaction kind, no duplicates. */
export function checkKinds(kinds: readonly string[]): string[] {
  const max = limits.reactionKindsPerActivity;
  if (kinds.length > max) throw validationFailed([{ path: "kinds", message: `at most ${max} kinds` }]);
  const seen = new Set<string>();
  kinds.forEach((k, i) => {
    if (!isReactionKind(k)) throw validationFailed([{ path: `kinds.${i}`, message: "must match ^[A-Za-z0-9_-]{1,64}$" }]);
    if (seen.has(k)) throw validationFailed([{ path: `kinds.${i}`, message: "duplicate kind" }]);
    seen.add(k);
  });
  return [...kinds];
}

/**
 * The reaction kinds a tenant declared (none: any kind). Stored in MongoDB; the reaction path
 * reads them through a Redis read cache (`kit/src/read-cache.ts`) that a PUT invalidates before
 * it answers, so the next reaction on any replica sees the new list.
 */
export function createReactionKinds(deps: { db: Db; redis: RedisConn }) {
  const lists: Collection<KindsDoc> = deps.db.collection<KindsDoc>("reaction_kinds");
  const cache = createReadCache<string[]>(deps.redis, "reaction-kinds", { encode: (v) => v, decode: (v) => v as string[] }, { ttlSeconds: TTL_SECONDS });
  const load = async (tenantId: string) => (await lists.findOne({ _id: tenantId, tenant_id: tenantId }))?.kinds ?? [];

  return {
    /** From MongoDB (the route that shows them). */
    get: load,
    /** Replaces the list (empty: clears it); answers it as stored. */
    async set(tenantId: string, kinds: readonly string[]): Promise<string[]> {
      const checked = checkKinds(kinds);
      if (checked.length === 0) await lists.deleteOne({ _id: tenantId, tenant_id: tenantId });
      else await lists.replaceOne({ _id: tenantId }, { tenant_id: tenantId, kinds: checked, updated_at: new Date() }, { upsert: true });
      await cache.invalidate(tenantId, [ENTRY]);
      return checked;
    },
    /** For each reaction: the declared kinds from the cache (empty: any kind). */
    async declared(tenantId: string): Promise<string[]> {
      const found = await cache.read(tenantId, [ENTRY], async () => {
        const kinds = await load(tenantId);
        return new Map(kinds.length ? [[ENTRY, kinds]] : []);
      });
      return found.get(ENTRY) ?? [];
    },
  };
}

export type ReactionKinds = ReturnType<typeof createReactionKinds>;
