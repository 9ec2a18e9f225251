import { randomUUID } from "node:crypto";
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
  /** Exact browser origins allowed to call with this tenant's tokens (absent: none). */
  allowed_origins?: string[];
  created_at: Date;
  updated_at: Date;
  /** Names the last change of secret or status: a change applies only to the state it was decided
   * on, and only that change is ever undone. */
  change_id?: string;
}

/** What the gateways verify a tenant's tokens with, besides its api key, and answer them by. */
export type CredentialChange = Pick<TenantDoc, "secret"> | Pick<TenantDoc, "status"> | Required<Pick<TenantDoc, "allowed_origins">>;

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
    /** Every origin some tenant allows, each once. */
    async allowedOrigins(): Promise<string[]> {
      const rows = await tenants.find({ allowed_origins: { $exists: true } }, { projection: { allowed_origins: 1 } }).toArray();
      return [...new Set(rows.flatMap((r) => r.allowed_origins ?? []))];
    },
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
    /**
     * Applies a change under a new `change_id`, only while the stored change is still `after`
     * (the one the change was decided on: null for a tenant never changed); answers the tenant
     * after it, or null when another change came first (or there is no such tenant).
     */
    change(id: string, set: CredentialChange, changeId: string, after: string | null) {
      return tenants.findOneAndUpdate(
        { _id: id, change_id: after ?? { $exists: false } },
        { $set: { ...set, change_id: changeId, updated_at: new Date() } },
        { returnDocument: "after" },
      );
    },
    /**
     * Puts back what a change replaced, only while that change is still the stored one, under a
     * change id of its own (so a change decided on the undone state does not apply).
     */
    async undo(id: string, changeId: string, restore: CredentialChange & Pick<TenantDoc, "updated_at">): Promise<boolean> {
      const r = await tenants.updateOne({ _id: id, change_id: changeId }, { $set: { ...restore, change_id: randomUUID() } });
      return r.matchedCount === 1;
    },
  };
}

export type TenantRepository = ReturnType<typeof createTenantRepository>;
