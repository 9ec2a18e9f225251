import type { Collection, Db, UpdateFilter } from "mongodb";
import { createReadCache, dateFieldsCodec, type OutboxFields, type PendingChange, type RedisConn } from "@feeds/kit";

export interface UserDoc extends OutboxFields {
  _id: string; // `${tenant_id}/${id}`
  tenant_id: string;
  id: string;
  custom_json: string;
  created_at: Date;
  updated_at: Date;
  /** Written as the epoch since revocations have their own collection; older records may hold a
   * revocation here, so it still counts as a floor. */
  revoked_before: Date;
}

/** A user's revocation stamp, kept apart from the record: any user id can be revoked, and no
 * upsert of the record touches it. */
interface RevocationDoc {
  _id: string; // `${tenant_id}/${id}`
  tenant_id: string;
  id: string;
  revoked_before: Date;
}

/** The `_id` of a user's record. */
export const userKey = (tenantId: string, id: string) => `${tenantId}/${id}`;
const key = userKey;
/** Reads leave out the pending changes (the events a write still owes). */
const PUBLIC = { projection: { outbox: 0, outbox_pending: 0 } };
export const NEVER_REVOKED = new Date(0);

/** The stamp that refuses a user's tokens: the later of its revocation and its record's floor. */
export function revokedBefore(record: UserDoc | null, revocation: Date | undefined): Date {
  const floor = record?.revoked_before ?? NEVER_REVOKED;
  return revocation && revocation > floor ? revocation : floor;
}

/** All MongoDB access for end-users; every method takes the tenant first. */
export function createUserRepository(db: Db) {
  const users: Collection<UserDoc> = db.collection<UserDoc>("users");
  const revocations: Collection<RevocationDoc> = db.collection<RevocationDoc>("user_revocations");
  return {
    async ensureIndexes() {
      await users.createIndex({ tenant_id: 1, created_at: -1, _id: -1 });
    },
    get: (tenantId: string, id: string) => users.findOne({ _id: key(tenantId, id) }, PUBLIC),
    count: (tenantId: string) => users.countDocuments({ tenant_id: tenantId }),
    getMany: (tenantId: string, ids: string[]) =>
      users.find({ tenant_id: tenantId, _id: { $in: ids.map((id) => key(tenantId, id)) } }, PUBLIC).toArray(),
    /**
     * Upsert; answers the stored document and whether it was created. `pending` (the outbox's
     * `forUpdate`) records the events the write owes in the same update.
     */
    async upsert(
      tenantId: string,
      id: string,
      customJson: string,
      now = new Date(),
      pending?: { $push: { outbox: PendingChange }; $set: { outbox_pending: true } },
    ): Promise<{ doc: UserDoc; created: boolean }> {
      const update: UpdateFilter<UserDoc> = {
        $set: { custom_json: customJson, updated_at: now, ...pending?.$set },
        $setOnInsert: { tenant_id: tenantId, id, created_at: now, revoked_before: NEVER_REVOKED },
      };
      if (pending) update.$push = pending.$push;
      const before = await users.findOneAndUpdate({ _id: key(tenantId, id) }, update, { upsert: true, returnDocument: "before" });
      if (!before) {
        return {
          created: true,
          doc: { _id: key(tenantId, id), tenant_id: tenantId, id, custom_json: customJson, created_at: now, updated_at: now, revoked_before: NEVER_REVOKED },
        };
      }
      const { outbox: _o, outbox_pending: _p, ...record } = before;
      return { created: false, doc: { ...record, custom_json: customJson, updated_at: now } };
    },
    /** Refuses the user's tokens issued before `at`, record or not; answers the stored stamp
     * (a concurrent later revocation wins: the stamp only moves forward). */
    async revoke(tenantId: string, id: string, at: Date): Promise<Date> {
      const doc = await revocations.findOneAndUpdate(
        { _id: key(tenantId, id) },
        { $max: { revoked_before: at }, $setOnInsert: { tenant_id: tenantId, id } },
        { upsert: true, returnDocument: "after" },
      );
      return doc && doc.revoked_before > at ? doc.revoked_before : at;
    },
    /** The revocation stamps of these users (absent: never revoked through this collection). */
    async revocations(tenantId: string, ids: string[]): Promise<Map<string, Date>> {
      const filter = { tenant_id: tenantId, _id: { $in: ids.map((id) => key(tenantId, id)) } };
      const rows = ids.length ? await revocations.find(filter).toArray() : [];
      return new Map(rows.map((r) => [r.id, r.revoked_before]));
    },
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
      return users.find(filter, PUBLIC).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray();
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
    async upsert(tenantId, id, customJson, now, pending) {
      const res = await repo.upsert(tenantId, id, customJson, now, pending);
      await cache.invalidate(tenantId, [id]);
      return res;
    },
  };
}
