import type { JsMsg } from "nats";
import { createQueueWorker, processMetrics, type Logger, type Nats, type QueueWorker, type WorkerBeats } from "@feeds/kit";
import type { DestinationRepository } from "./destination-repository.js";
import type { RecordRepository } from "./record-repository.js";
import { DELIVERY_SUBJECT, type DeliveryTask } from "./publisher.js";
import type { Post } from "./post.js";
import { signedHeaders } from "./signing.js";
import { createSlots } from "./slots.js";

// The webhook delivery worker: one task per event and destination from the `webhooks` queue.
// Each attempt is signed afresh (Standard Webhooks timestamps must be recent), cut off at the
// attempt time limit, counted in the record, and retried after the schedule's next wait (±25%
// jitter) until the attempts run out; then the record is `failed` and the task dead-lettered.
// JetStream's own delivery count is not the attempt count: a task that finds its destination's
// slots taken goes back to the queue without an attempt.

export interface DeliveryOptions {
  attemptTimeoutMs: number;
  /** Waits before the 2nd, 3rd, ... attempt; attempts = its length + 1. */
  retryScheduleMs: readonly number[];
  /** Attempts in flight in this process. */
  concurrency?: number;
  /** Attempts in flight per destination in this process. */
  perDestination?: number;
}

/** A destination whose last attempt here succeeded waits this long for a free slot. */
const SLOT_WAIT_MS = 250;
const jitter = (ms: number) => Math.round(ms * (0.75 + Math.random() * 0.5));

export function createDeliveryWorker(deps: {
  nats: Nats;
  log: Logger;
  destinations: DestinationRepository;
  records: RecordRepository;
  post: Post;
  options: DeliveryOptions;
  /** Readiness names the webhooks worker when its loop stops beating. */
  beats?: WorkerBeats;
}): QueueWorker {
  const { nats, log, destinations, records, post, options } = deps;
  const maxAttempts = options.retryScheduleMs.length + 1;
  const slots = createSlots(options.perDestination ?? 8);
  /** Whether each destination's last attempt in this process succeeded. */
  const healthy = new Map<string, boolean>();
  const outcomes = processMetrics().webhookDeliveries;

  async function giveUp(m: JsMsg, task: DeliveryTask, why: string) {
    log.warn({ record: task.r, destination: task.d, why }, "webhook delivery dead-lettered");
    outcomes.inc({ outcome: "dead_lettered" });
    await nats.js.publish(nats.subject("webhooks_dlq", DELIVERY_SUBJECT), m.data, { msgID: `dlq:${m.info.stream}:${m.seq}` });
    await records.fail(task.t, task.r);
    m.term();
  }

  async function handle(m: JsMsg): Promise<void> {
    const task = JSON.parse(new TextDecoder().decode(m.data)) as DeliveryTask;
    if (!(await slots.take(task.d, healthy.get(task.d) === false ? 0 : SLOT_WAIT_MS))) {
      // Deferred, not attempted (the queue worker's ack after a nak does nothing).
      m.nak(jitter(options.attemptTimeoutMs));
      return;
    }
    let outcome;
    try {
      const dest = await destinations.forDelivery(task.t, task.d);
      // Deleted: nothing is delivered to it any more.
      if (!dest) return await records.fail(task.t, task.r);
      const body = JSON.stringify(task.e);
      outcome = await post(dest.url, body, signedHeaders(dest.secret, task.e.id, Math.floor(Date.now() / 1000), body));
    } finally {
      slots.release(task.d);
    }
    healthy.set(task.d, outcome.ok);
    if (outcome.ok) outcomes.inc({ outcome: "delivered" });
    if (outcome.ok) return records.published(task.t, task.r);
    const attempts = await records.attemptFailed(task.t, task.r);
    if (outcome.refused) return giveUp(m, task, outcome.error ?? "refused address");
    if (attempts >= maxAttempts || attempts === 0) return giveUp(m, task, outcome.error ?? `answered ${outcome.status}`);
    outcomes.inc({ outcome: "retrying" });
    m.nak(jitter(options.retryScheduleMs[attempts - 1] ?? options.retryScheduleMs.at(-1) ?? 1000));
  }

  return createQueueWorker({
    nats,
    log,
    queue: "webhooks",
    durable: "deliveries",
    subject: DELIVERY_SUBJECT,
    handle,
    concurrency: options.concurrency ?? 128,
    // Our attempts are counted in the record; JetStream's count also holds deferrals and
    // failures of our own storage (those retry on the queue worker's short backoff).
    maxDeliver: 10_000,
    // Tasks waiting for a retry stay unacknowledged: a dead destination's backlog must not
    // reach the limit at which JetStream stops handing out every other destination's tasks.
    maxAckPending: 100_000,
    ackWaitMs: options.attemptTimeoutMs + SLOT_WAIT_MS + 20_000,
    ...(deps.beats ? { beats: { worker: "webhooks" as const, beats: deps.beats } } : {}),
  });
}
