// What a new notification did to its owner's groups (issue 23): the realtime stream's
// `notification.added` event carries it beside the notification and the flat counts. The
// notification service computes it where it stores the notification (its `onAdded` hook).

/** A new notification's group summary: its group after it, and the owner's group counts. */
export interface NotificationGroupSummary {
  group: { group_key: string; activity_count: number; actor_count: number };
  /** The owner's groups with an unseen member, and with an unread one. */
  groups_unseen: number;
  groups_unread: number;
}
