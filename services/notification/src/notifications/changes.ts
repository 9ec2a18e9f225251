import { type Outbox, type PendingChange } from "@feeds/kit";
import { COUNTS, countsTarget, type Counts, type CountsDelta, type CountsDoc, type CountsRepository } from "./counts.js";
import { NOTIFICATIONS, type NotificationDoc, type NotificationRepository, type Selection } from "./notification-repository.js";
import type { LiveNotifications } from "./live.js";

/** What a mark's pending change names (`change.data`): the owner's selections as the request gave them. */
interface MarkData {
  seen: Selection | null;
  read: Selection | null;
}

const NEW: CountsDelta = { unseen: 1, unread: 1 };
const deltaOf = (change: PendingChange): CountsDelta => {
  const d = (change.data ?? {}) as Partial<CountsDelta>;
  return { unseen: Number(d.unseen ?? 0), unread: Number(d.unread ?? 0) };
};

/**
 * The writes that move an owner's counts, each with its pending change (kit's outbox): a new
 * notification (+1 unseen, +1 unread, applied once) and a mark (minus what it set). The outboxes'
 * relays finish what a writer that died left: `finishNotification` takes a notification's +1,
 * `finishMark` counts a mark's stamps and takes them off.
 */
export function createCountChanges(deps: {
  notifications: Pick<NotificationRepository, "insert" | "mark" | "stamped">;
  counts: Pick<CountsRepository, "apply" | "recordMark">;
  /** The outbox of notifications (their +1s). */
  inserts: Pick<Outbox, "change" | "forInsert" | "settle">;
  /** The outbox of counts documents (marks: a writer may take long to set thousands). */
  marks: Pick<Outbox, "change" | "settle">;
  /** The owners' live streams (published before a change settles; the relay's finish publishes again). */
  live: LiveNotifications;
}) {
  const { notifications, counts } = deps;
  return {
    /** Stores `n` (once: a repeat stores nothing) and counts it; answers whether it was new. */
    async add(n: NotificationDoc): Promise<boolean> {
      const change = deps.inserts.change([], { id: n._id, targets: [countsTarget(n.tenant_id, n.owner)], data: { ...NEW } });
      if (!(await notifications.insert({ ...n, ...deps.inserts.forInsert(change) }))) return false;
      const after = await counts.apply(n.tenant_id, n.owner, change.id, NEW);
      // Issue 23 §2's group fields (group, groups_unseen, groups_unread) join this event as `extra`.
      await deps.live.added(n, after);
      await deps.inserts.settle(NOTIFICATIONS, n._id, change);
      return true;
    },

    /** Marks the selections and answers the owner's counts after. */
    async mark(tenantId: string, owner: string, seen: Selection | null, read: Selection | null): Promise<Counts> {
      const data: MarkData = { seen, read };
      const change = deps.marks.change([], { targets: [countsTarget(tenantId, owner)], data: { ...data } });
      await counts.recordMark(tenantId, owner, change);
      const set = await notifications.mark(tenantId, owner, seen, read, change.id, change.at);
      const after = await counts.apply(tenantId, owner, change.id, { unseen: -set.seen, unread: -set.read });
      await deps.live.counts(tenantId, owner, change.id, after);
      await deps.marks.settle(COUNTS, countsTarget(tenantId, owner).id, change);
      return after;
    },

    /** The relay's finish of a notification whose writer died before counting it. */
    async finishNotification(doc: NotificationDoc, change: PendingChange): Promise<void> {
      const after = await counts.apply(doc.tenant_id, doc.owner, change.id, deltaOf(change));
      await deps.live.added(doc, after);
    },

    /** The relay's finish of a mark whose writer died: what it stamped comes off the counts. */
    async finishMark(doc: CountsDoc, change: PendingChange): Promise<void> {
      const set = await notifications.stamped(doc.tenant_id, doc.owner, change.id);
      const after = await counts.apply(doc.tenant_id, doc.owner, change.id, { unseen: -set.seen, unread: -set.read });
      await deps.live.counts(doc.tenant_id, doc.owner, change.id, after);
    },
  };
}

export type CountChanges = ReturnType<typeof createCountChanges>;

/**
 * The counts a page shows: those kept, plus the +1s of the page's notifications not applied yet
 * (inserted, their count a moment behind), so that they count at least what the page shows.
 */
export function countsForPage(kept: Counts & { applied: string[] }, page: readonly NotificationDoc[]): Counts {
  const applied = new Set(kept.applied);
  let { unseen, unread } = kept;
  for (const d of page) {
    for (const c of d.outbox ?? []) {
      if (applied.has(c.id)) continue;
      const delta = deltaOf(c);
      unseen += delta.unseen;
      unread += delta.unread;
    }
  }
  return { unseen, unread };
}
