import { conflict, forbidden, internal, type Logger, type Outbox, type PendingChange } from "@feeds/kit";
import type { Filter } from "mongodb";
import { isActiveOwner, OPERATORS, TEAMS, type OperatorDoc, type OperatorRepository } from "./operator-repository.js";

// The last-active-owner rule without a lock. Each tenant's team document holds its count of
// active owners (role owner, status active, invite accepted); every change that makes or unmakes
// one moves the count in a single conditional update, so the count never claims an owner that
// is not there:
//
//   - a loss (demotion, disable) takes from the count first, only while more than one is left
//     (the loser of a race for the last two owners finds 1 and gets 409), recording the change
//     in the team document in the same update; then the operator changes, conditioned on the
//     state the decision was made on. Did the operator change meanwhile, the count is given back
//     (with the change, at most once) and the request decides again.
//   - a gain (promotion, enable, an owner's invite accepted) changes the operator first,
//     recording the change in the operator document, and then adds to the count, once.
//
// Between the two writes the count is at most the number of active owners, never more. A writer
// that dies between them leaves its change to the outbox relay: a gain is added (once); a loss is
// voided on the operator (the writer's update can no longer match) and given back, unless the
// operator changed, in which case the count keeps it.

/** Attempts at a change whose target kept changing under it. */
const MAX_ATTEMPTS = 5;

type TeamChangeData = { kind: "owner_gained"; tenant: string; operator: string } | { kind: "owner_lost"; tenant: string; operator: string };

/** The pending change of an owner loss: its clear removes its id from the count's applied list (from then on the loss stands). */
export const lossChange = (outbox: Outbox, tenant: string, operator: string): PendingChange =>
  outbox.change([], { targets: [{ collection: TEAMS, id: tenant }], data: { kind: "owner_lost", tenant, operator } });
/** The pending change of an owner gain (its id stays in the count's applied list: a replay matches nothing). */
export const gainChange = (outbox: Outbox, tenant: string, operator: string): PendingChange =>
  outbox.change([], { data: { kind: "owner_gained", tenant, operator } });

/** The operator as it was read: a conditional update goes through only while this still holds. */
function sameState(d: OperatorDoc): Filter<OperatorDoc> {
  return { tenant_id: d.tenant_id, role: d.role, status: d.status, password_hash: d.password_hash === null ? null : { $ne: null } };
}

export function createTeam(deps: { operators: OperatorRepository; outbox: Outbox; log: Logger }) {
  const { operators, outbox, log } = deps;

  deps.outbox.register(OPERATORS, async (_doc, change) => {
    const data = change.data as TeamChangeData | undefined;
    if (data?.kind === "owner_gained") await operators.addOwner(data.tenant, change.id);
  });
  deps.outbox.register(TEAMS, async (doc, change) => {
    const data = change.data as TeamChangeData | undefined;
    if (data?.kind === "owner_lost" && !(await operators.settleLoss(data.operator, change.id))) {
      await operators.giveBackOwner(doc._id, change.id);
    }
  });

  /**
   * Sets `set` on `target` if it is still as read, moving the owner count with it. Answers the
   * operator after, or null when it was not as read (the caller reads again). Throws CONFLICT
   * when the change would leave no active owner.
   */
  async function apply(target: OperatorDoc, set: Partial<OperatorDoc>, filter: Filter<OperatorDoc> = {}): Promise<OperatorDoc | null> {
    const tenant = target.tenant_id;
    const was = isActiveOwner(target);
    const will = tenant !== null && isActiveOwner({ ...target, ...set });
    const where = { ...filter, ...sameState(target) };
    if (!tenant || was === will) return operators.updateIf(target._id, where, set);

    if (will) {
      const change = gainChange(outbox, tenant, target._id);
      const updated = await operators.updateIf(target._id, where, set, { gain: outbox.forUpdate(change) });
      if (updated) await countGain(target._id, tenant, change);
      return updated;
    }

    const change = lossChange(outbox, tenant, target._id);
    if (!(await operators.takeOwner(tenant, outbox.forUpdate(change)))) {
      // The count has one left: the target's loss would take it, unless the target is no
      // longer what was read (its loss came first): then the caller decides again.
      const now = await operators.stored(target._id);
      if (now && isActiveOwner(now) && now.tenant_id === tenant) throw conflict("the change would leave the tenant with no active owner");
      return null;
    }
    let updated: OperatorDoc | null;
    try {
      updated = await operators.updateIf(target._id, where, set, { loss: change.id });
    } catch (err) {
      // Whether it landed is unknown: the relay finds out, and gives the count back if not.
      throw internal(err);
    }
    if (!updated) {
      await operators.giveBackOwner(tenant, change.id);
      outbox.discard(TEAMS, tenant, change);
      return null;
    }
    outbox.discard(TEAMS, tenant, change);
    return updated;
  }

  /** The count's half of a gain, after the operator's: a failure is left to the relay (the gain stands). */
  async function countGain(operatorId: string, tenant: string, change: PendingChange): Promise<void> {
    try {
      await operators.addOwner(tenant, change.id);
      outbox.discard(OPERATORS, operatorId, change);
    } catch (err) {
      log.warn({ err: String(err), change: change.id }, "owner count left to the outbox relay");
    }
  }

  return {
    /**
     * Changes the role or status of `targetId`, a teammate of `callerId` on `tenantId`: 403 for
     * anyone else (never 404) and for the caller itself, 409 when no active owner would be left.
     */
    async change(tenantId: string, callerId: string, targetId: string, set: Pick<OperatorDoc, "role"> | Pick<OperatorDoc, "status">): Promise<OperatorDoc> {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const target = await operators.stored(targetId);
        if (!target || target.tenant_id !== tenantId || target._id === callerId) throw forbidden();
        const updated = await apply(target, set);
        if (updated) return updated;
      }
      throw internal(new Error(`operator ${targetId} kept changing`));
    },

    /**
     * Accepts an invite once: the first caller with the unused, unexpired token of an active
     * operator wins, and the token is spent in the same update. Null for everyone else.
     */
    async accept(tokenHash: string, passwordHash: string): Promise<OperatorDoc | null> {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const op = await operators.byInviteHash(tokenHash);
        const now = new Date();
        if (!op?.invite || op.invite.expires_at <= now || op.status !== "active" || op.password_hash !== null) return null;
        const accepted = await apply(op, { password_hash: passwordHash, invite: null }, { "invite.token_hash": tokenHash, "invite.expires_at": { $gt: now } });
        if (accepted) return accepted;
      }
      return null;
    },
  };
}

export type Team = ReturnType<typeof createTeam>;
