import type { Collection, Db } from "mongodb";
import type { Sealed } from "@feeds/kit";

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
}

/** All MongoDB access for tenants. */
export function createTenantRepository(db: Db) {
  const tenants: Collection<TenantDoc> = db.collection<TenantDoc>("tenants");
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
    update(id: string, set: Partial<TenantDoc>) {
      return tenants.findOneAndUpdate(
        { _id: id },
        { $set: { ...set, updated_at: new Date() } },
        { returnDocument: "after" },
      );
    },
  };
}

export type TenantRepository = ReturnType<typeof createTenantRepository>;
