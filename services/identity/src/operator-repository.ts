import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { internal, isDuplicateKey } from "@feeds/kit";

export type RoleValue = "staff" | "owner" | "member";
export type StatusValue = "active" | "disabled";

export interface OperatorDoc {
  _id: string;
  tenant_id: string | null;
  email: string;
  name: string;
  role: RoleValue;
  status: StatusValue;
  password_hash: string | null;
  invite: { token_hash: string; expires_at: Date; accepted_at: Date | null } | null;
  created_at: Date;
  updated_at: Date;
}

export interface SessionDoc {
  _id: string; // sha256 of the token
  operator_id: string;
  expires_at: Date;
  created_at: Date;
}

interface LockDoc {
  _id: string;
  until: Date;
  holder: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** All MongoDB access for operators, their sessions and the per-tenant team lock. */
export function createOperatorRepository(db: Db) {
  const operators: Collection<OperatorDoc> = db.collection<OperatorDoc>("operators");
  const sessions: Collection<SessionDoc> = db.collection<SessionDoc>("operator_sessions");
  const locks: Collection<LockDoc> = db.collection<LockDoc>("team_locks");
  return {
    async ensureIndexes() {
      await operators.createIndex({ email: 1 }, { unique: true });
      await operators.createIndex({ tenant_id: 1, created_at: 1, _id: 1 });
      await operators.createIndex({ "invite.token_hash": 1 });
      await sessions.createIndex({ operator_id: 1 });
    },
    byEmail: (email: string) => operators.findOne({ email }),
    byId: (id: string) => operators.findOne({ _id: id }),
    byInviteHash: (hash: string) => operators.findOne({ "invite.token_hash": hash }),
    insert: (doc: OperatorDoc) => operators.insertOne(doc),
    ofTenant: (tenantId: string) => operators.find({ tenant_id: tenantId }).toArray(),
    page(tenantId: string, limit: number, after: { created_at: Date; id: string } | null) {
      const filter = after
        ? {
            tenant_id: tenantId,
            $or: [
              { created_at: { $gt: after.created_at } },
              { created_at: after.created_at, _id: { $gt: after.id } },
            ],
          }
        : { tenant_id: tenantId };
      return operators.find(filter).sort({ created_at: 1, _id: 1 }).limit(limit + 1).toArray();
    },
    update: (id: string, set: Partial<OperatorDoc>) =>
      operators.findOneAndUpdate({ _id: id }, { $set: { ...set, updated_at: new Date() } }, { returnDocument: "after" }),
    /** Accepts an invite once: only the first caller with an unused token wins. */
    async acceptInvite(id: string, tokenHash: string, passwordHash: string): Promise<boolean> {
      const now = new Date();
      const r = await operators.updateOne(
        { _id: id, "invite.token_hash": tokenHash, "invite.accepted_at": null, status: "active" },
        { $set: { password_hash: passwordHash, "invite.accepted_at": now, updated_at: now } },
      );
      return r.modifiedCount === 1;
    },
    insertSession: (doc: SessionDoc) => sessions.insertOne(doc),
    session: (hash: string) => sessions.findOne({ _id: hash }),
    deleteSession: (hash: string) => sessions.deleteOne({ _id: hash }),
    deleteSessionsOf: (operatorId: string) => sessions.deleteMany({ operator_id: operatorId }),

    /**
     * Runs `fn` while holding the tenant's team lock, so that checks such as "at least one active
     * owner remains" and the change they guard cannot interleave (no multi-document transactions
     * on FerretDB v1). The lease expires by itself if a holder dies.
     */
    async withTeamLock<T>(tenantId: string, fn: () => Promise<T>): Promise<T> {
      const holder = randomUUID();
      try {
        await locks.insertOne({ _id: tenantId, until: new Date(0), holder: "" });
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
      const deadline = Date.now() + 8000;
      for (;;) {
        const now = new Date();
        const r = await locks.updateOne(
          { _id: tenantId, until: { $lt: now } },
          { $set: { until: new Date(now.getTime() + 10_000), holder } },
        );
        if (r.modifiedCount === 1) break;
        if (Date.now() > deadline) throw internal(new Error(`team lock of ${tenantId} not acquired`));
        await sleep(10 + Math.random() * 30);
      }
      try {
        return await fn();
      } finally {
        await locks.updateOne({ _id: tenantId, holder }, { $set: { until: new Date(0), holder: "" } });
      }
    },
  };
}

export type OperatorRepository = ReturnType<typeof createOperatorRepository>;
