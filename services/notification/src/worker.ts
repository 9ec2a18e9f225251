import { createQueueWorker, decodeEvent, type FeedEvent, type Logger, type Nats, type QueueWorker, type WorkerBeats } from "@feeds/kit";

/** What a handler knows of the event's delivery: `redelivered`, it was handed out before. */
export interface EventDelivery {
  redelivered: boolean;
}

/** Turns one event into its consequences (notifications, webhook deliveries). Must be idempotent:
 * a task is redelivered after any failure, and every handler runs again. */
export type EventHandler = (event: FeedEvent, delivery: EventDelivery) => Promise<void>;

/** The notify worker: every event of the system, from the `notify` work queue, through each handler in turn. */
export function createNotifyWorker(deps: { nats: Nats; log: Logger; handlers: readonly EventHandler[]; beats?: WorkerBeats }): QueueWorker {
  return createQueueWorker({
    nats: deps.nats,
    log: deps.log,
    queue: "notify",
    durable: "events",
    subject: "event",
    concurrency: 64,
    ...(deps.beats ? { beats: { worker: "notify" as const, beats: deps.beats } } : {}),
    async handle(m) {
      const event = decodeEvent(m.data);
      const delivery = { redelivered: m.info.redeliveryCount > 1 };
      for (const handle of deps.handlers) await handle(event, delivery);
    },
  });
}
