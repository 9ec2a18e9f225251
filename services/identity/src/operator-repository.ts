import type { Collection, Db } from "mongodb";
import { createLocks } from "@feeds/kit";

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

/** All MongoDB access for operators, their sessions and the per-tenant team lock. */
export function createOperatorRepository(db: Db) {
  const operators: Collection<OperatorDoc> = db.collection<OperatorDoc>("operators");
  const sessions: Collection<SessionDoc> = db.collection<SessionDoc>("operator_sessions");
  const locks = createLocks(db, "operator_locks");
  return {
    async ensureIndexes() {
      await operators.createIndex({ email: 1 }, { unique: true });
      await operators.createIndex({ tenant_id: 1, created_at: 1, _id: 1 });
      await operators.createIndex({ "invite.token_hash": 1 });
      await sessions.createIndex({ operator_id: 1 });
      await sessions.createIndex({ expires_at: 1 });
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
    /** Housekeeping (no TTL index on FerretDB v1): up to `limit` sessions expired before `now`. */
    async deleteExpiredSessions(now: Date, limit: number): Promise<number> {
      const ids = (await sessions.find({ expires_at: { $lt: now } }, { projection: { _id: 1 } }).limit(limit).toArray()).map((d) => d._id);
      if (!ids.length) return 0;
      return (await sessions.deleteMany({ _id: { $in: ids }, expires_at: { $lt: now } })).deletedCount;
    },
    /** Up to `limit` operators whose invite was accepted: its token is spent. */
    usedInvites: (limit: number) =>
      operators
        .find({ "invite.accepted_at": { $gt: new Date(0) } }, { projection: { _id: 1, tenant_id: 1 } })
        .limit(limit)
        .toArray(),
    /** Drops spent invites; run under the team lock, as every other write of a teammate. */
    async clearUsedInvites(ids: string[]): Promise<number> {
      const r = await operators.updateMany({ _id: { $in: ids }, "invite.accepted_at": { $gt: new Date(0) } }, { $set: { invite: null } });
      return r.modifiedCount;
    },
    /** Up to `limit` invites that expired unaccepted before `now`. */
    expiredInvites: (now: Date, limit: number) =>
      operators
        .find({ password_hash: null, "invite.accepted_at": null, "invite.expires_at": { $lt: now } }, { projection: { _id: 1, invite: 1 } })
        .limit(limit)
        .toArray(),
    /** Removes an operator that never was more than its invite, once that expired unaccepted. */
    async deleteExpiredInvite(id: string, now: Date): Promise<boolean> {
      const r = await operators.deleteOne({ _id: id, password_hash: null, "invite.accepted_at": null, "invite.expires_at": { $lt: now } });
      return r.deletedCount === 1;
    },
    session: (hash: string) => sessions.findOne({ _id: hash }),
    deleteSession: (hash: string) => sessions.deleteOne({ _id: hash }),
    deleteSessionsOf: (operatorId: string) => sessions.deleteMany({ operator_id: operatorId }),
    sessionHashesOf: async (operatorId: string) =>
      (await sessions.find({ operator_id: operatorId }, { projection: { _id: 1 } }).toArray()).map((d) => d._id),

    /**
     * Runs `fn` while holding the tenant's team lock, so that checks such as "at least one active
     * owner remains" and the change they guard cannot interleave (no multi-document transactions
     * on FerretDB v1).
     */
    withTeamLock: <T>(tenantId: string, fn: () => Promise<T>) => locks.withLock(`team:${tenantId}`, fn),
    /** Runs `fn` while holding an invite's lock: acceptance is single-use under concurrency. */
    withInviteLock: <T>(tokenHash: string, fn: () => Promise<T>) => locks.withLock(`invite:${tokenHash}`, fn),
  };
}

export type OperatorRepository = ReturnType<typeof createOperatorRepository>;
