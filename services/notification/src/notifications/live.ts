import { liveOwnerMessage, publishLive, type Nats } from "@feeds/kit";
import type { Counts } from "./counts.js";
import type { NotificationDoc } from "./notification-repository.js";

// The owner's live stream (docs/stream.md): notification.added with the counts after it, and
// notification.counts after a mark. Each is published after the counts moved and before the
// change is settled, so a writer that fails to publish leaves its change to the relay, whose
// finish publishes it again (the message id makes the two one event).

/** The Notification as the flat route shows it, without actor_user (the gateway resolves it at delivery). */
export const liveNotificationJson = (n: NotificationDoc): Record<string, unknown> => ({
  id: n._id,
  verb: n.verb,
  actor: n.actor,
  object: n.object,
  reaction_kind: n.reaction_kind,
  activity_id: n.activity_id,
  created_at: n.created_at.toISOString(),
  seen_at: n.seen_at ? n.seen_at.toISOString() : null,
  read_at: n.read_at ? n.read_at.toISOString() : null,
});

export interface LiveNotifications {
  /**
   * notification.added: `{notification, unseen, unread}`. `extra` is where further fields of the
   * event join it (the notification's group and the group counts).
   */
  added(n: NotificationDoc, counts: Counts, extra?: Record<string, unknown>): Promise<void>;
  /** notification.counts `{unseen, unread}` after the mark `changeId`. */
  counts(tenantId: string, owner: string, changeId: string, counts: Counts, extra?: Record<string, unknown>): Promise<void>;
}

export function createLiveNotifications(nats: Nats): LiveNotifications {
  return {
    async added(n, c, extra = {}) {
      const data = { notification: liveNotificationJson(n), unseen: c.unseen, unread: c.unread, ...extra };
      await publishLive(nats, [liveOwnerMessage(nats, n.tenant_id, n.owner, "notification.added", data, n._id)]);
    },
    async counts(tenantId, owner, changeId, c, extra = {}) {
      const data = { unseen: c.unseen, unread: c.unread, ...extra };
      await publishLive(nats, [liveOwnerMessage(nats, tenantId, owner, "notification.counts", data, changeId)]);
    },
  };
}
