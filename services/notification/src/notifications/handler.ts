import type { FeedEvent, Logger } from "@feeds/kit";
import type { EventHandler } from "../worker.js";
import type { Added, CountChanges } from "./changes.js";
import { notificationOf } from "./from-event.js";

/**
 * The notify worker's notifications handler: one event, at most one notification, inserted under
 * an id derived from the event, so however often the event is redelivered (a failure of this or
 * another handler, a process that died before its ack, the graph's relay publishing again) the
 * notification exists once, and is counted once (its pending change, kit's outbox), in its owner's
 * counts and in its group's. `onAdded` hears of each new notification (the stream's events).
 */
export function createNotificationHandler(deps: {
  changes: Pick<CountChanges, "add">;
  log: Logger;
  onAdded?: (added: Added) => Promise<void>;
}): EventHandler {
  const { changes, log } = deps;
  // A redelivered event joins the group it joined before: a base's collecting group only moves to
  // later windows, so the act is within the one collecting now; its insert is then a duplicate.
  return async (event: FeedEvent) => {
    const outcome = notificationOf(event);
    if ("skip" in outcome) {
      if (outcome.skip === "malformed") log.warn({ event: event.id, type: event.type }, "event not turned into a notification: malformed");
      return;
    }
    const added = await changes.add(outcome.notify);
    if (added && deps.onAdded) await deps.onAdded(added);
  };
}
