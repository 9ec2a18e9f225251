import { randomUUID } from "node:crypto";
import {
  eventMessages,
  fromRpcError,
  internal,
  notFound,
  workScope,
  type Finish,
  type Logger,
  type Nats,
  type Outbox,
  type PendingChange,
} from "@feeds/kit";
import { activityTarget, type Activities } from "./activities.js";
import { notAfter, whenSettled } from "./changes.js";
import { reactionEvent } from "./events.js";
import type { OwnReactions } from "./own-reactions.js";
import { REACTIONS, reactionKey, type ReactionDoc, type ReactionRepository } from "./reaction-repository.js";

/** What a reaction's pending change asks of its activity (`change.data`). */
interface CountChange {
  kind: string;
  delta: 1 | -1;
}

/** The feed service refused the change for good: the activity is not live, or has no slot for the kind. */
const refusedForGood = (code: string) => code === "NOT_FOUND" || code === "VALIDATION_FAILED";

/**
 * A reaction added or removed: the reaction's own document carries the pending change (its event
 * and its count change, kit's outbox), then one once-only update of the activity in the feed
 * service (`reaction_counts.<kind>` and `version`, the bound of kinds a condition of it), then the
 * own-reactions cache; the event goes out after the answer. A writer that dies anywhere leaves the
 * change to the outbox relay (`finish`), which makes the count update (once: a replay of an applied
 * change matches nothing) and publishes, or drops the reaction the activity refused.
 */
export function createReactionChanges(deps: {
  reactions: Pick<ReactionRepository, "insert" | "markRemoving" | "remove">;
  activities: Pick<Activities, "actorOf" | "live" | "apply">;
  outbox: Pick<Outbox, "change" | "forInsert" | "settle" | "discard">;
  own: Pick<OwnReactions, "invalidate">;
  nats: Nats;
  log: Logger;
}) {
  const { reactions, activities, outbox, own, nats, log } = deps;
  const forget = (r: ReactionDoc) => own.invalidate(r.tenant_id, r.user_id, r.activity_id);

  /** The count change's failure: a refusal undoes the reaction (`undo`), anything else is the relay's. */
  async function failed(r: ReactionDoc, e: unknown, undo: () => Promise<unknown>): Promise<never> {
    const err = fromRpcError(e);
    if (refusedForGood(err.code)) await undo();
    // A read may have cached the reaction meanwhile (or must see it gone): before the answer.
    await forget(r).catch(() => undefined);
    throw refusedForGood(err.code) ? err : internal(e);
  }

  /** After the answer: the removal's event, then its document goes (or both are the relay's). */
  async function finishRemoval(r: ReactionDoc, change: PendingChange): Promise<void> {
    if (!(await outbox.settle(REACTIONS, r._id, change, { clear: false }))) return;
    await reactions.remove(r);
    outbox.discard(REACTIONS, r._id, change);
  }

  return {
    /** Adds `user`'s reaction of `kind` to the activity; answers the one stored already for a repeat. */
    async add(tenantId: string, activityId: string, userId: string, kind: string): Promise<{ doc: ReactionDoc; created: boolean }> {
      const actor = await activities.actorOf(tenantId, activityId);
      return whenSettled(async () => {
        const at = new Date();
        const doc: ReactionDoc = {
          _id: reactionKey(tenantId, activityId, userId, kind),
          id: randomUUID(),
          tenant_id: tenantId,
          activity_id: activityId,
          user_id: userId,
          kind,
          created_at: at,
          activity_actor: actor,
        };
        const data: CountChange = { kind, delta: 1 };
        const change = outbox.change(eventMessages(nats, [reactionEvent("reaction.added", doc, actor, at)]), {
          targets: [activityTarget(tenantId, activityId)],
          data: { ...data },
          at,
        });
        const stored = await reactions.insert({ ...doc, ...outbox.forInsert(change) });
        // The reaction under this key is on its way out: once it is gone, this one goes in.
        if (stored === null || stored.doc.removing) return "busy";
        if (!stored.created) {
          // The same reaction again: 200 with it, on a live activity. The cache is made right
          // again too (a retry of a call whose invalidation failed).
          await activities.live(tenantId, activityId);
          await forget(doc);
          return stored;
        }
        try {
          await activities.apply(tenantId, activityId, { kind, delta: 1, changeId: change.id, notAfter: notAfter(at) });
        } catch (e) {
          return failed(doc, e, () => reactions.remove(doc));
        }
        // The event after the answer (a failed publish is the relay's); the clear in the background.
        void workScope.exit(() => outbox.settle(REACTIONS, doc._id, change));
        await forget(doc);
        return { doc, created: true };
      });
    },

    /**
     * Removes the reaction `find` answers (404 when there is none; `check` may refuse it first).
     * A reaction whose add is still pending waits for it: its count must be made before it goes.
     */
    async remove(tenantId: string, find: () => Promise<ReactionDoc | null>, check: (r: ReactionDoc) => void = () => undefined): Promise<void> {
      const { r, change } = await whenSettled(async () => {
        const current = await find();
        if (!current) throw notFound("reaction not found");
        check(current);
        const actor = current.activity_actor ?? (await activities.actorOf(tenantId, current.activity_id));
        const at = new Date();
        const data: CountChange = { kind: current.kind, delta: -1 };
        const pending = outbox.change(eventMessages(nats, [reactionEvent("reaction.deleted", current, actor, at)]), {
          targets: [activityTarget(tenantId, current.activity_id)],
          data: { ...data },
          at,
        });
        // Not recorded: another change of it is pending (wait), or it went meanwhile (404 next).
        if (!(await reactions.markRemoving(current, pending))) return "busy";
        return { r: current, change: pending };
      });
      try {
        await activities.apply(tenantId, r.activity_id, { kind: r.kind, delta: -1, changeId: change.id, notAfter: notAfter(change.at) });
      } catch (e) {
        // A deleted activity: its reaction goes without an event (404, as for any call on it).
        return failed(r, e, () => reactions.remove(r));
      }
      await forget(r);
      void workScope.exit(() => finishRemoval(r, change).catch((err: unknown) => log.debug({ err: String(err), change: change.id }, "reaction removal left to the outbox relay")));
    },

    /**
     * The relay's finish of a change whose writer did not: the count update (once), then its event
     * (the kit publishes it) and, for a removal, the document's deletion; a change the activity
     * refuses for good (deleted, or no slot for a new kind) goes without an event, with its
     * reaction. Own reactions are made right before the outcome is stored.
     */
    finish: (async (doc, change) => {
      const r = doc as unknown as ReactionDoc;
      const { kind, delta } = change.data as unknown as CountChange;
      try {
        await activities.apply(r.tenant_id, r.activity_id, { kind, delta, changeId: change.id });
      } catch (e) {
        if (!refusedForGood(fromRpcError(e).code)) throw e;
        await reactions.remove(r);
        await forget(r);
        return "drop";
      }
      await forget(r);
      return delta < 0 ? "delete" : undefined;
    }) satisfies Finish,
  };
}

export type ReactionChanges = ReturnType<typeof createReactionChanges>;
