import type { Collection, Db } from "mongodb";
import { isDuplicateKey, onceFilter, onceUpdate, type OutboxFields, type OutboxTarget, type PendingChange } from "@feeds/kit";

// Each owner's unseen and unread counts live in one document, moved by increments, never
// recounted: a notification's insert carries its pending change (+1 unseen, +1 unread) and the
// counts take it once (the change id joins `applied` in the same atomic update, so a replay by the
// outbox relay or a redelivered event matches nothing). A mark records its pending change in the
// counts document first, stamps the notifications it sets (`seen_by`/`read_by`: the change id),
// then takes minus what it set; a relay finishing a mark whose writer died counts the stamps. `v`
// moves with every change: the owner's change signal.

export const COUNTS = "notification_counts";

export interface Counts {
  unseen: number;
  unread: number;
}

export interface CountsDoc extends OutboxFields {
  /** `tenant/owner` (neither part holds a `/`: ids). */
  _id: string;
  tenant_id: string;
  owner: string;
  unseen: number;
  unread: number;
  /** Moves with every change of the owner's notifications (the change signal's version). */
  v: number;
  /** Change ids whose increments this document holds (kit's outbox clears them). */
  applied?: string[];
}

export const countsKey = (tenantId: string, owner: string) => `${tenantId}/${owner}`;
export const countsTarget = (tenantId: string, owner: string): OutboxTarget => ({ collection: COUNTS, id: countsKey(tenantId, owner) });

/** What a change does to the counts (`PendingChange.data`): +1/+1 for a new notification, minus what a mark set. */
export interface CountsDelta {
  unseen: number;
  unread: number;
}

export function createCountsRepository(db: Db) {
  const counts: Collection<CountsDoc> = db.collection<CountsDoc>(COUNTS);
  const of = (d: Pick<CountsDoc, "unseen" | "unread"> | null): Counts => ({ unseen: Math.max(0, d?.unseen ?? 0), unread: Math.max(0, d?.unread ?? 0) });
  return {
    /** The owner's counts and version (zeros, version 0, for an owner with no notification yet). */
    async get(tenantId: string, owner: string): Promise<Counts & { version: number; applied: string[] }> {
      const d = await counts.findOne({ _id: countsKey(tenantId, owner), tenant_id: tenantId });
      return { ...of(d), version: d?.v ?? 0, applied: d?.applied ?? [] };
    },

    /**
     * Applies `delta` for change `changeId` once; answers the counts after (also when the change
     * was applied before: then as they are).
     */
    async apply(tenantId: string, owner: string, changeId: string, delta: CountsDelta): Promise<Counts & { version: number }> {
      const _id = countsKey(tenantId, owner);
      let after: CountsDoc | null = null;
      try {
        after = await counts.findOneAndUpdate(
          onceFilter<CountsDoc>({ _id, tenant_id: tenantId }, changeId),
          onceUpdate<CountsDoc>({ $inc: { unseen: delta.unseen, unread: delta.unread, v: 1 }, $setOnInsert: { owner } }, changeId),
          { upsert: true, returnDocument: "after" },
        );
      } catch (e) {
        // The document exists and holds the change already: the upsert's insert collided.
        if (!isDuplicateKey(e)) throw e;
      }
      after ??= await counts.findOne({ _id, tenant_id: tenantId });
      return { ...of(after), version: after?.v ?? 0 };
    },

    /** Records a mark's pending change on the owner's counts document (created if missing). */
    async recordMark(tenantId: string, owner: string, change: PendingChange): Promise<void> {
      await counts.updateOne(
        { _id: countsKey(tenantId, owner), tenant_id: tenantId },
        { $push: { outbox: change }, $set: { outbox_pending: true }, $setOnInsert: { owner, unseen: 0, unread: 0, v: 0 } },
        { upsert: true },
      );
    },
  };
}

export type CountsRepository = ReturnType<typeof createCountsRepository>;
