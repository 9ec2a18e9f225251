import type { Collection, Db, Document, Filter, UpdateFilter } from "mongodb";
import { isDuplicateKey, type OutboxFields, type PendingChange } from "@feeds/kit";

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
  /** While the invite is pending; acceptance removes it (the spent token goes with it). */
  invite: { token_hash: string; expires_at: Date } | null;
  created_at: Date;
  updated_at: Date;
}

/** What the operator document holds besides: pending owner gains, and the owner losses it went through. */
interface StoredOperator extends OperatorDoc, OutboxFields {
  team_changes?: string[];
}

export interface SessionDoc {
  _id: string; // sha256 of the token
  operator_id: string;
  expires_at: Date;
  created_at: Date;
}

/**
 * A tenant's team: how many active owners it has. Every change that makes or unmakes an active
 * owner moves the count in one conditional update, a loss only while more than one is left, so
 * the count is the invariant's one document (see team.ts).
 */
export interface TeamDoc extends OutboxFields {
  _id: string; // tenant id
  active_owners: number;
  /**
   * Ids of the changes whose effect the count holds: owner gains (kept for a while, so a replay of
   * one matches nothing) and owner losses (until the loss is carried out and its change cleared,
   * or given back).
   */
  applied?: string[];
}

/** An owner who can act: active and with the invite accepted. */
export const isActiveOwner = (d: Pick<OperatorDoc, "role" | "status" | "password_hash">) =>
  d.role === "owner" && d.status === "active" && d.password_hash !== null;

/** How many change ids a document remembers: far more than can be in flight on one at a time. */
const KEEP_IDS = 50;
/** The mark the relay leaves on an operator whose loss it gave back: the writer's update cannot match after it. */
const voided = (changeId: string) => `void:${changeId}`;

export const OPERATORS = "operators";
export const TEAMS = "operator_teams";

/** Reads leave out the bookkeeping (pending changes, marks). */
const PUBLIC = { projection: { outbox: 0, outbox_pending: 0, team_changes: 0 } };
/** The same for a document a write answered (no projection there). */
function publicOf(d: StoredOperator): OperatorDoc {
  const { outbox: _o, outbox_pending: _p, team_changes: _t, ...rest } = d;
  return rest;
}

/** What a pending change adds to an update (`outbox.forUpdate`). */
export type PendingUpdate = { $push: { outbox: PendingChange }; $set: { outbox_pending: true } };

/**
 * A TTL index on `field` (documents go once it is past). An index on the same key without the
 * option (from before) is replaced.
 */
async function ensureTtl<T extends Document>(coll: Collection<T>, field: string): Promise<void> {
  type Index = { name: string; key: Record<string, unknown>; expireAfterSeconds?: number };
  const indexes = (await coll.listIndexes().toArray().catch(() => [])) as Index[];
  const same = indexes.find((ix) => Object.keys(ix.key).length === 1 && ix.key[field] === 1);
  if (same?.expireAfterSeconds === 0) return;
  if (same) await coll.dropIndex(same.name);
  await coll.createIndex({ [field]: 1 }, { expireAfterSeconds: 0 });
}

/** All MongoDB access for operators, their sessions and their tenants' team documents. */
export function createOperatorRepository(db: Db) {
  const operators: Collection<StoredOperator> = db.collection<StoredOperator>(OPERATORS);
  const sessions: Collection<SessionDoc> = db.collection<SessionDoc>("operator_sessions");
  const teams: Collection<TeamDoc> = db.collection<TeamDoc>(TEAMS);
  const byId = (id: string): Promise<OperatorDoc | null> => operators.findOne({ _id: id }, PUBLIC);

  /**
   * Counts a team document from the operators, once (a tenant whose team was never counted).
   * Owner gains pending on an operator are in its state already: they count as applied. While no
   * team document exists no loss can happen (a loss takes from the count first), and a gain that
   * raced this count either is in it (its id applied) or adds itself afterwards.
   */
  async function countTeam(tenantId: string): Promise<void> {
    const team = await operators
      .find({ tenant_id: tenantId }, { projection: { role: 1, status: 1, password_hash: 1, outbox: 1 } })
      .toArray();
    const doc: TeamDoc = {
      _id: tenantId,
      active_owners: team.filter(isActiveOwner).length,
      applied: team.flatMap((o) => (o.outbox ?? []).map((c) => c.id)),
    };
    try {
      await teams.insertOne(doc);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
  }
  const teamExists = async (tenantId: string) => (await teams.countDocuments({ _id: tenantId }, { limit: 1 })) === 1;

  return {
    async ensureIndexes() {
      // Invites accepted before acceptance removed them: their spent tokens go (the TTL below
      // must not take an accepted operator for an expired invite).
      await operators.updateMany({ invite: { $ne: null }, password_hash: { $ne: null } }, { $set: { invite: null } });
      await Promise.all([
        operators.createIndex({ email: 1 }, { unique: true }),
        operators.createIndex({ tenant_id: 1, created_at: 1, _id: 1 }),
        operators.createIndex({ "invite.token_hash": 1 }),
        // An operator that never was more than its invite goes once the invite expired (the email can be invited again).
        ensureTtl(operators, "invite.expires_at"),
        sessions.createIndex({ operator_id: 1 }),
        ensureTtl(sessions, "expires_at"),
      ]);
    },
    byEmail: (email: string): Promise<OperatorDoc | null> => operators.findOne({ email }, PUBLIC),
    byId,
    /** The stored operator (never a cached copy: what a conditional update is decided on). */
    stored: byId,
    byInviteHash: (hash: string): Promise<OperatorDoc | null> => operators.findOne({ "invite.token_hash": hash }, PUBLIC),
    insert: (doc: OperatorDoc) => operators.insertOne(doc),
    page(tenantId: string, limit: number, after: { created_at: Date; id: string } | null): Promise<OperatorDoc[]> {
      const filter = after
        ? {
            tenant_id: tenantId,
            $or: [
              { created_at: { $gt: after.created_at } },
              { created_at: after.created_at, _id: { $gt: after.id } },
            ],
          }
        : { tenant_id: tenantId };
      return operators.find(filter, PUBLIC).sort({ created_at: 1, _id: 1 }).limit(limit + 1).toArray();
    },

    /**
     * Sets `set` on operator `id` only while it matches `filter`; answers it after, or null. With
     * `gain`, the update records that pending change (an owner gain the team count owes); with
     * `loss`, it carries out the loss of that id once: not after the relay voided it.
     */
    updateIf(
      id: string,
      filter: Filter<OperatorDoc>,
      set: Partial<OperatorDoc>,
      opts: { gain?: PendingUpdate; loss?: string } = {},
    ): Promise<OperatorDoc | null> {
      const where: Filter<StoredOperator> = { ...(filter as Filter<StoredOperator>), _id: id };
      const update: UpdateFilter<StoredOperator> = { $set: { ...set, updated_at: new Date(), ...opts.gain?.$set } };
      if (opts.gain) update.$push = opts.gain.$push;
      if (opts.loss) {
        where.team_changes = { $nin: [opts.loss, voided(opts.loss)] };
        update.$push = { team_changes: { $each: [opts.loss], $slice: -KEEP_IDS } };
      }
      return operators.findOneAndUpdate(where, update, { returnDocument: "after" }).then((d) => d && publicOf(d));
    },

    /**
     * Takes one active owner from the tenant's count, only while more than one is left; the
     * pending change (the loss it is for) is recorded in the same update. False: the last one.
     */
    async takeOwner(tenantId: string, pending: PendingUpdate): Promise<boolean> {
      const changeId = pending.$push.outbox.id;
      const take = () =>
        teams.updateOne(
          { _id: tenantId, active_owners: { $gt: 1 } },
          { $inc: { active_owners: -1 }, $push: { ...pending.$push, applied: { $each: [changeId], $slice: -KEEP_IDS } }, $set: pending.$set },
        );
      const r = await take();
      if (r.matchedCount === 1) return true;
      if (await teamExists(tenantId)) return false;
      await countTeam(tenantId);
      return (await take()).matchedCount === 1;
    },
    /**
     * Gives back what `takeOwner` took for change `changeId`, once: while its id is applied (the
     * change's clear removes it, after which the loss stands).
     */
    async giveBackOwner(tenantId: string, changeId: string): Promise<void> {
      await teams.updateOne({ _id: tenantId, applied: changeId }, { $inc: { active_owners: 1 }, $pull: { applied: changeId } });
    },
    /** Adds the owner gained by change `changeId` to the count, once (the writer and the relay alike). */
    async addOwner(tenantId: string, changeId: string): Promise<void> {
      for (let i = 0; i < 3; i++) {
        const r = await teams.updateOne(
          { _id: tenantId, applied: { $ne: changeId } },
          { $inc: { active_owners: 1 }, $push: { applied: { $each: [changeId], $slice: -KEEP_IDS } } },
        );
        if (r.matchedCount === 1 || (await teamExists(tenantId))) return;
        await countTeam(tenantId);
      }
    },
    /**
     * For the relay: makes sure loss `changeId` of operator `operatorId` can no longer be carried
     * out, and answers whether it was (then the count keeps it; otherwise it is to be given back).
     */
    async settleLoss(operatorId: string, changeId: string): Promise<boolean> {
      await operators.updateOne(
        { _id: operatorId, team_changes: { $nin: [changeId, voided(changeId)] } },
        { $push: { team_changes: { $each: [voided(changeId)], $slice: -KEEP_IDS } } },
      );
      const op = await operators.findOne({ _id: operatorId }, { projection: { team_changes: 1 } });
      return op?.team_changes?.includes(changeId) ?? false;
    },
    team: (tenantId: string) => teams.findOne({ _id: tenantId }),

    insertSession: (doc: SessionDoc) => sessions.insertOne(doc),
    session: (hash: string) => sessions.findOne({ _id: hash }),
    deleteSession: (hash: string) => sessions.deleteOne({ _id: hash }),
    deleteSessionsOf: (operatorId: string) => sessions.deleteMany({ operator_id: operatorId }),
    sessionHashesOf: async (operatorId: string) =>
      (await sessions.find({ operator_id: operatorId }, { projection: { _id: 1 } }).toArray()).map((d) => d._id),
  };
}

export type OperatorRepository = ReturnType<typeof createOperatorRepository>;
