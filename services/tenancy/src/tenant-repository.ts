import type { Collection, Db } from "mongodb";
import { createLocks, type Lease, type Sealed } from "@feeds/kit";

export type TenantStatusValue = "active" | "suspended";

export interface TenantDoc {
  _id: string;
  name: string;
  api_key: string;
  secret: Sealed;
  status: TenantStatusValue;
  rate_limit_per_minute: number | null;
  created_at: Date;
  updated_at: Date;
  /** Names the last change of secret or status, so that only that change is ever undone. */
  change_id?: string;
}

/** What the gateways verify a tenant's tokens with, besides its api key. */
export type CredentialChange = Pick<TenantDoc, "secret"> | Pick<TenantDoc, "status">;

/** All MongoDB access for tenants. */
export function createTenantRepository(db: Db) {
  const tenants: Collection<TenantDoc> = db.collection<TenantDoc>("tenants");
  const locks = createLocks(db, "tenant_locks");
  return {
    async ensureIndexes() {
      await tenants.createIndex({ api_key: 1 }, { unique: true });
      await tenants.createIndex({ created_at: -1, _id: -1 });
    },
    insert: (doc: TenantDoc) => tenants.insertOne(doc),
    byId: (id: string) => tenants.findOne({ _id: id }),
    byApiKey: (apiKey: string) => tenants.findOne({ api_key: apiKey }),
    /** Keyset page, newest first: (created_at desc, _id desc). */
    page(limit: number, after: { created_at: Date; id: string } | null) {
      const filter = after
        ? {
            $or: [
              { created_at: { $lt: after.created_at } },
              { created_at: after.created_at, _id: { $lt: after.id } },
            ],
          }
        : {};
      return tenants.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray();
    },
    /** Applies a change under a new `change_id`; answers the tenant after it, or null. */
    change(id: string, set: CredentialChange, changeId: string) {
      return tenants.findOneAndUpdate(
        { _id: id },
        { $set: { ...set, change_id: changeId, updated_at: new Date() } },
        { returnDocument: "after" },
      );
    },
    /** Puts back what a change replaced, only while that change is still the stored one. */
    async undo(id: string, changeId: string, restore: CredentialChange & Pick<TenantDoc, "updated_at">): Promise<boolean> {
      const r = await tenants.updateOne({ _id: id, change_id: changeId }, { $set: restore });
      return r.matchedCount === 1;
    },
    /** Serialises changes of one tenant's credential (FerretDB v1 has no atomic compare-and-set). */
    withTenantLock: <T>(id: string, fn: (lease: Lease) => Promise<T>) => locks.withLock(`tenant:${id}`, fn),
  };
}

export type TenantRepository = ReturnType<typeof createTenantRepository>;
