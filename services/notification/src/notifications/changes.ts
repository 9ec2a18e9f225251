import { type Outbox, type PendingChange } from "@feeds/kit";
import { COUNTS, countsTarget, type Counts, type CountsDelta, type CountsDoc, type CountsRepository } from "./counts.js";
import { groupMarksTarget, groupTarget, type GroupDoc, type GroupRepository } from "./group-repository.js";
import { NOTIFICATIONS, type NotificationDoc, type NotificationRepository, type Selection } from "./notification-repository.js";

/** What a new notification did: its owner's counts and its group after it. */
export interface Added {
  notification: NotificationDoc & { group_key: string };
  counts: Counts;
  group: GroupDoc | null;
}

/** What the owners' live streams are told: a new notification, and the counts after a mark. */
export interface LiveChanges {
  added(added: Added): Promise<void>;
  counts(tenantId: string, owner: string, changeId: string, counts: Counts): Promise<void>;
}

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
  notifications: Pick<NotificationRepository, "insert" | "mark" | "stamped" | "markedInGroups" | "memberOf">;
  counts: Pick<CountsRepository, "apply" | "recordMark">;
  groups: Pick<GroupRepository, "assign" | "addMember" | "applyMark">;
  /** The outbox of notifications (their +1s). */
  inserts: Pick<Outbox, "change" | "forInsert" | "settle">;
  /** The outbox of counts documents (marks: a writer may take long to set thousands). */
  marks: Pick<Outbox, "change" | "settle">;
  /**
   * The owners' live streams (docs/stream.md): told after the counts moved and before the change
   * settles, so a writer that fails to publish leaves its change to the relay, whose finish tells
   * them again (the live message id makes the two one event).
   */
  live?: LiveChanges;
}) {
  const { notifications, counts, groups } = deps;

  /**
   * The groups whose members mark `change` stamped: their unseen and unread go down by what it
   * set, once (the mark's id joins their `applied`; its pending change names the owner's groups,
   * `groupMarksTarget`, so its clear takes the id off them again), and they record its time.
   */
  async function stampGroups(tenantId: string, owner: string, change: PendingChange): Promise<void> {
    const marked = await notifications.markedInGroups(tenantId, owner, change.id);
    await groups.applyMark(tenantId, owner, change.id, change.at, marked, (key) => notifications.memberOf(tenantId, owner, key));
  }

  return {
    /**
     * Stores `n` in its group (once: a repeat stores nothing) and counts it in the owner's counts
     * and the group's; answers what it did, or null when it existed already.
     */
    async add(n: NotificationDoc): Promise<Added | null> {
      const grouped = { ...n, group_key: await groups.assign(n) };
      const targets = [countsTarget(n.tenant_id, n.owner), groupTarget(grouped.group_key)];
      const change = deps.inserts.change([], { id: n._id, targets, data: { ...NEW } });
      if (!(await notifications.insert({ ...grouped, ...deps.inserts.forInsert(change) }))) return null;
      const [after, group] = await Promise.all([counts.apply(n.tenant_id, n.owner, change.id, NEW), groups.addMember(grouped, change.id)]);
      const added: Added = { notification: grouped, counts: { unseen: after.unseen, unread: after.unread }, group };
      await deps.live?.added(added);
      await deps.inserts.settle(NOTIFICATIONS, n._id, change);
      return added;
    },

    /** Marks the selections and answers the owner's counts after. */
    async mark(tenantId: string, owner: string, seen: Selection | null, read: Selection | null): Promise<Counts> {
      const data: MarkData = { seen, read };
      const change = deps.marks.change([], { targets: [countsTarget(tenantId, owner), groupMarksTarget(tenantId, owner)], data: { ...data } });
      await counts.recordMark(tenantId, owner, change);
      const set = await notifications.mark(tenantId, owner, seen, read, change.id, change.at);
      const after = await counts.apply(tenantId, owner, change.id, { unseen: -set.seen, unread: -set.read });
      await stampGroups(tenantId, owner, change);
      // The counts event before the settle; NATS down, both are the relay's (finishMark) and the
      // mark, made, still answers.
      const published = await (deps.live?.counts(tenantId, owner, change.id, after) ?? Promise.resolve()).then(
        () => true,
        () => false,
      );
      if (published) await deps.marks.settle(COUNTS, countsTarget(tenantId, owner).id, change);
      return after;
    },

    /** The relay's finish of a notification whose writer died before counting it. */
    async finishNotification(doc: NotificationDoc, change: PendingChange): Promise<void> {
      const after = await counts.apply(doc.tenant_id, doc.owner, change.id, deltaOf(change));
      const group = doc.group_key ? await groups.addMember({ ...doc, group_key: doc.group_key }, change.id) : null;
      await deps.live?.added({ notification: { ...doc, group_key: doc.group_key ?? "" }, counts: { unseen: after.unseen, unread: after.unread }, group });
    },

    /** The relay's finish of a mark whose writer died: what it stamped comes off the counts. */
    async finishMark(doc: CountsDoc, change: PendingChange): Promise<void> {
      const set = await notifications.stamped(doc.tenant_id, doc.owner, change.id);
      const after = await counts.apply(doc.tenant_id, doc.owner, change.id, { unseen: -set.seen, unread: -set.read });
      await stampGroups(doc.tenant_id, doc.owner, change);
      await deps.live?.counts(doc.tenant_id, doc.owner, change.id, after);
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
