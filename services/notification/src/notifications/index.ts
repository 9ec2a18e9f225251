import type { Db } from "mongodb";
import { createOutbox, ensureLiveStream, ownerWatched, type Clients, type Logger, type Nats, type NotificationGroupSummary, type RedisConn } from "@feeds/kit";
import { createCountChanges, type Added } from "./changes.js";
import { createLiveNotifications } from "./live.js";
import { COUNTS, createCountsRepository } from "./counts.js";
import { createGroupRepository, GROUP_MARKS } from "./group-repository.js";
import { createNotificationHandler } from "./handler.js";
import { createNotificationRepository, NOTIFICATIONS } from "./notification-repository.js";
import { createNotificationService } from "./routes.js";

/**
 * How long a mark's change is its writer's before the relay finishes it from its stamps: a mark
 * of every notification of a large feed takes a while, and a relay finishing a mark still
 * running would miss what it sets afterwards.
 */
export const MARK_GRACE_MS = 60_000;

/** A new notification as the stream reports it: the notification, the owner's counts and its group's summary. */
export type NotificationAdded = Omit<Added, "group"> & NotificationGroupSummary;

/** The notification feeds: the RPCs, the notify worker's handler that fills them, and the counts' relays. */
export async function createNotifications(deps: {
  db: Db;
  nats: Nats;
  redis: RedisConn;
  peers: () => Pick<Clients, "users">;
  log: Logger;
  graceMs?: { inserts?: number; marks?: number };
  /** Hears of every new notification with its group summary (the realtime stream); a failure redelivers the event. */
  onAdded?: (added: NotificationAdded) => Promise<void>;
}) {
  // Owners' live streams take notification.added and notification.counts (docs/stream.md).
  await ensureLiveStream(deps.nats);
  const notifications = createNotificationRepository(deps.db);
  const counts = createCountsRepository(deps.db, deps.redis, deps.log);
  const groups = createGroupRepository(deps.db);
  const inserts = createOutbox({ db: deps.db, nats: deps.nats, log: deps.log, graceMs: deps.graceMs?.inserts });
  const marks = createOutbox({
    db: deps.db,
    nats: deps.nats,
    log: deps.log,
    graceMs: deps.graceMs?.marks ?? MARK_GRACE_MS,
    clearTargets: { [GROUP_MARKS]: (applied) => groups.pullMarks(applied) },
  });

  /** A new notification's group summary: its group after it, and the owner's group counts now. */
  async function summaryOf(added: Added): Promise<NotificationGroupSummary> {
    const n = added.notification;
    const c = await groups.counts(n.tenant_id, n.owner);
    const g = added.group;
    return {
      group: { group_key: n.group_key, activity_count: g?.activity_count ?? 1, actor_count: g?.actor_count ?? 1 },
      groups_unseen: c.unseen,
      groups_unread: c.unread,
    };
  }
  // The stream's notification events carry the group summary; the counts event the group counts
  // too. Both go only to an owner a stream watches (kit's ownerWatched): for the others neither
  // the event nor the group counts it carries are made (a stream that marks the owner later reads
  // what came before over REST, and a resume from before its mark is reset).
  const stream = createLiveNotifications(deps.nats);
  const watched = (tenantId: string, owner: string) => ownerWatched(deps.redis, tenantId, owner);
  const live = {
    async added(a: Added) {
      if (!(await watched(a.notification.tenant_id, a.notification.owner))) return;
      await stream.added(a.notification, a.counts, { ...(await summaryOf(a)) });
    },
    async counts(tenantId: string, owner: string, changeId: string, c: { unseen: number; unread: number }) {
      if (!(await watched(tenantId, owner))) return;
      const g = await groups.counts(tenantId, owner);
      await stream.counts(tenantId, owner, changeId, c, { groups_unseen: g.unseen, groups_unread: g.unread });
    },
  };
  const changes = createCountChanges({ notifications, counts, groups, inserts, marks, live });
  inserts.register(NOTIFICATIONS, (doc, change) => changes.finishNotification(doc as never, change));
  marks.register(COUNTS, (doc, change) => changes.finishMark(doc as never, change));
  await Promise.all([notifications.ensureIndexes(), groups.ensureIndexes(), inserts.ensureIndexes(), marks.ensureIndexes()]);
  const onAdded = deps.onAdded;

  return {
    service: createNotificationService({ notifications, counts, changes, groups, peers: deps.peers }),
    handler: createNotificationHandler({
      changes,
      log: deps.log,
      ...(onAdded ? { onAdded: async ({ group: _group, ...added }: Added) => onAdded({ ...added, ...(await summaryOf({ ...added, group: _group })) }) } : {}),
    }),
    /** The group summary of a new notification (what `onAdded` receives beside it). */
    summaryOf,
    /** The writes that move the counts (tests drive them directly). */
    changesForTests: changes,
    countsForTests: counts,
    /** Starts the outbox relays (any number of processes may run them: a relay claims what it finishes). */
    start() {
      inserts.startRelay();
      marks.startRelay();
    },
    async stop() {
      await Promise.all([inserts.stop(), marks.stop()]);
    },
    /** Waits for the clears queued so far (tests). */
    flush: async () => void (await Promise.all([inserts.flush(), marks.flush()])),
    /** One pass of both relays (tests). */
    relayOnce: async () => (await inserts.relayOnce()) + (await marks.relayOnce()),
  };
}
