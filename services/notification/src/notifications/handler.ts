import type { FeedEvent, Logger } from "@feeds/kit";
import type { EventHandler } from "../worker.js";
import { notificationOf } from "./from-event.js";
import type { NotificationRepository } from "./notification-repository.js";
import type { NotificationSignal } from "./signal.js";

/**
 * The notify worker's notifications handler: one event, at most one notification, inserted under
 * an id derived from the event, so however often the event is redelivered (a failure of this or
 * another handler, a process that died before its ack, the graph's relay publishing again) the
 * notification exists once. The owner's signal moves on every delivery that gets this far.
 */
export function createNotificationHandler(deps: {
  notifications: Pick<NotificationRepository, "insert" | "counts">;
  signal: Pick<NotificationSignal, "change" | "refresh">;
  log: Logger;
}): EventHandler {
  const { notifications, signal, log } = deps;
  return async (event: FeedEvent) => {
    const outcome = notificationOf(event);
    if ("skip" in outcome) {
      if (outcome.skip === "malformed") log.warn({ event: event.id, type: event.type }, "event not turned into a notification: malformed");
      return;
    }
    const n = outcome.notify;
    await signal.change(n.tenant_id, n.owner, () => notifications.insert(n));
    await signal.refresh(n.tenant_id, n.owner, () => notifications.counts(n.tenant_id, n.owner));
  };
}
