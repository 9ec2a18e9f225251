import type { FeedEvent, Logger } from "@feeds/kit";
import type { EventHandler } from "../worker.js";
import type { CountChanges } from "./changes.js";
import { notificationOf } from "./from-event.js";

/**
 * The notify worker's notifications handler: one event, at most one notification, inserted under
 * an id derived from the event, so however often the event is redelivered (a failure of this or
 * another handler, a process that died before its ack, the graph's relay publishing again) the
 * notification exists once, and is counted once (its pending change, kit's outbox).
 */
export function createNotificationHandler(deps: { changes: Pick<CountChanges, "add">; log: Logger }): EventHandler {
  const { changes, log } = deps;
  return async (event: FeedEvent) => {
    const outcome = notificationOf(event);
    if ("skip" in outcome) {
      if (outcome.skip === "malformed") log.warn({ event: event.id, type: event.type }, "event not turned into a notification: malformed");
      return;
    }
    await changes.add(outcome.notify);
  };
}
