import type { Collection, Db } from "mongodb";
import { createReadCache, dateFieldsCodec, type RedisConn } from "@feeds/kit";

export interface UserDoc {
  _id: string; // `${tenant_id}/${id}`
  tenant_id: string;
  id: string;
  custom_json: string;
  created_at: Date;
  updated_at: Date;
  revoked_before: Date;
}

const key = (tenantId: string, id: string) => `${tenantId}/${id}`;
export const NEVER_REVOKED = new Date(0);

/** All MongoDB access for end-users; every method takes the tenant first. */
export function createUserRepository(db: Db) {
  const users: Collection<UserDoc> = db.collection<UserDoc>("users");
  return {
    async ensureIndexes() {
      await users.createIndex({ tenant_id: 1, created_at: -1, _id: -1 });
    },
    get: (tenantId: string, id: string) => users.findOne({ _id: key(tenantId, id) }),
    getMany: (tenantId: string, ids: string[]) =>
      users.find({ tenant_id: tenantId, _id: { $in: ids.map((id) => key(tenantId, id)) } }).toArray(),
    /** Upsert; answers the stored document and whether it was created. */
    async upsert(tenantId: string, id: string, customJson: string): Promise<{ doc: UserDoc; created: boolean }> {
      const now = new Date();
      const before = await users.findOneAndUpdate(
        { _id: key(tenantId, id) },
        {
          $set: { custom_json: customJson, updated_at: now },
          $setOnInsert: { tenant_id: tenantId, id, created_at: now, revoked_before: NEVER_REVOKED },
        },
        { upsert: true, returnDocument: "before" },
      );
      if (!before) {
        return {
          created: true,
          doc: { _id: key(tenantId, id), tenant_id: tenantId, id, custom_json: customJson, created_at: now, updated_at: now, revoked_before: NEVER_REVOKED },
        };
      }
      return { created: false, doc: { ...before, custom_json: customJson, updated_at: now } };
    },
    revoke: (tenantId: string, id: string, at: Date) =>
      users.findOneAndUpdate(
        { _id: key(tenantId, id) },
        { $set: { revoked_before: at, updated_at: at } },
        { returnDocument: "after" },
      ),
    /** Keyset page, newest first: (created_at desc, id desc). */
    page(tenantId: string, limit: number, after: { created_at: Date; id: string } | null) {
      const filter = after
        ? {
            tenant_id: tenantId,
            $or: [
              { created_at: { $lt: after.created_at } },
              { created_at: after.created_at, _id: { $lt: key(tenantId, after.id) } },
            ],
          }
        : { tenant_id: tenantId };
      return users.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray();
    },
  };
}

export type UserRepository = ReturnType<typeof createUserRepository>;

/** How long an actor user stays in the read cache (a crashed writer's stale entry at most this). */
export const USER_CACHE_TTL_SECONDS = 300;

const userCodec = dateFieldsCodec<UserDoc>("created_at", "updated_at", "revoked_before");

/**
 * The repository with `getMany` (actor_user enrichment of every feed read) served from a Redis
 * read cache; every write of a user invalidates its entry before answering.
 */
export function withUserCache(repo: UserRepository, redis: RedisConn): UserRepository {
  const cache = createReadCache(redis, "user", userCodec, { ttlSeconds: USER_CACHE_TTL_SECONDS });
  return {
    ...repo,
    async getMany(tenantId, ids) {
      const found = await cache.read(tenantId, ids, async (missing) => new Map((await repo.getMany(tenantId, missing)).map((d) => [d.id, d])));
      return [...found.values()];
    },
    async upsert(tenantId, id, customJson) {
      const res = await repo.upsert(tenantId, id, customJson);
      await cache.invalidate(tenantId, [id]);
      return res;
    },
    async revoke(tenantId, id, at) {
      const res = await repo.revoke(tenantId, id, at);
      await cache.invalidate(tenantId, [id]);
      return res;
    },
  };
}
