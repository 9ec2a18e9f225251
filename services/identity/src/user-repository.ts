import type { Collection, Db } from "mongodb";

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
      users.find({ _id: { $in: ids.map((id) => key(tenantId, id)) } }).toArray(),
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
