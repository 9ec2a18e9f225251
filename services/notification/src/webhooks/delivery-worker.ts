import type { JsMsg } from "nats";
import { createQueueWorker, inSpan, limits, SpanKind, SpanStatusCode, traceHeaders, processMetrics, type Logger, type Nats, type QueueWorker, type WorkerBeats } from "@feeds/kit";
import type { DeliveryTarget, DestinationRepository } from "./destination-repository.js";
import type { RecordChange, RecordKey, RecordRepository } from "./record-repository.js";
import { DELIVERY_SUBJECT, type DeliveryTask } from "./publisher.js";
import type { Post, PostOutcome } from "./post.js";
import { signedHeaders } from "./signing.js";
import { createSlots } from "./slots.js";

// The webhook delivery worker: one task per event and destination from the `webhooks` queue.
// Each attempt is signed afresh (Standard Webhooks timestamps must be recent), cut off at the
// attempt time limit, counted in the record, and retried after the schedule's next wait (±25%
// jitter) until the attempts run out; then the record is `failed` and the task dead-lettered.
// The record's first write is the first outcome (see record-repository), batched with every
// other delivery's; a task is acknowledged only once its write is stored. A destination has a
// few attempts in flight (slots) and a line of tasks waiting for them; a task it cannot take
// goes back to the queue without an attempt (JetStream's delivery count is not the attempt count).
// Above the destinations, a tenant has a bounded number of tasks in flight here (waiting for a
// destination's slot or attempting), and the rest of its tasks wait in the tenant's line, which
// holds no share of the worker's concurrency (the queue worker's `detach`): so the worker keeps
// taking other tenants' tasks while one tenant's backlog waits. The lines together hold at most
// PARKED_MAX tasks, and one is no longer than its tenant's pace gets through in LINE_WAIT_MS;
// a task past that goes back to the queue at once, without an attempt, booked at that pace.

export interface DeliveryOptions {
  attemptTimeoutMs: number;
  /** Waits before the 2nd, 3rd, ... attempt; attempts = its length + 1. */
  retryScheduleMs: readonly number[];
  /** Tasks handled at once in this process (attempting, waiting for a slot, storing the record). */
  concurrency?: number;
  /** Attempts in flight per destination in this process. */
  perDestination?: number;
  /** Tasks waiting for a destination's slot or attempting, per tenant in this process (default limits.webhookDeliveriesPerTenant). */
  perTenant?: number;
}

const DEFAULT_CONCURRENCY = 1024;
const DEFAULT_PER_DESTINATION = 16;

/** A task of a destination whose last attempt here succeeded waits in line for a slot while the
 * destination's attempts keep ending at least this often. */
const STALL_MS = 250;
/** A task joins a line that its destination's pace gets through in this long. */
const LINE_WAIT_MS = 10_000;
/** Tasks waiting in tenants' lines in this process, all tenants together (memory, not concurrency). */
const PARKED_MAX = 4096;
/** While a task waits in line, its ack wait is restarted this often. */
const KEEP_MS = 10_000;
/** An attempt running this long first writes the record as pending. */
const RECORD_GRACE_MS = 1000;
/** Record ids this process stored, so that a task's next write goes straight to an update. */
const WRITTEN_MAX = 100_000;
const jitter = (ms: number) => Math.round(ms * (0.75 + Math.random() * 0.5));

export function createDeliveryWorker(deps: {
  nats: Nats;
  log: Logger;
  destinations: DestinationRepository;
  records: Pick<RecordRepository, "write">;
  post: Post;
  options: DeliveryOptions;
  /** Readiness names the webhooks worker when its loop stops beating. */
  beats?: WorkerBeats;
}): QueueWorker {
  const { nats, log, destinations, records, post, options } = deps;
  const maxAttempts = options.retryScheduleMs.length + 1;
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const slots = createSlots(options.perDestination ?? DEFAULT_PER_DESTINATION, LINE_WAIT_MS);
  const tenants = createSlots(options.perTenant ?? limits.webhookDeliveriesPerTenant, LINE_WAIT_MS, PARKED_MAX);
  // A tenant none of whose tasks here ended within one attempt's time sends its line away.
  const tenantStallMs = options.attemptTimeoutMs + STALL_MS;
  /** Whether each destination's last attempt in this process succeeded. */
  const healthy = new Map<string, boolean>();
  const outcomes = processMetrics().webhookDeliveries;
  const written = new Set<string>();

  async function write(change: RecordChange): Promise<number> {
    const attempts = await records.write(change);
    if (written.size >= WRITTEN_MAX) written.delete(written.values().next().value ?? "");
    written.add(change.record._id);
    return attempts;
  }
  const fresh = (record: RecordKey) => !written.has(record._id);

  /** Back to the queue without an attempt; a failing or stalled destination's task first shows as pending. */
  async function defer(m: JsMsg, record: RecordKey, delayMs: number, showPending: boolean) {
    if (showPending && fresh(record)) await write({ record, attempted: false, status: "pending", fresh: true });
    // Whole milliseconds: the server reads a fractional delay as none (an immediate redelivery).
    // (The queue worker's ack after a nak does nothing.)
    m.nak(Math.max(1, Math.ceil(delayMs)));
  }

  async function giveUp(m: JsMsg, record: RecordKey, why: string) {
    log.warn({ record: record._id, destination: record.destination_id, why }, "webhook delivery dead-lettered");
    outcomes.inc({ outcome: "dead_lettered" });
    await nats.js.publish(nats.subject("webhooks_dlq", DELIVERY_SUBJECT), m.data, { msgID: `dlq:${m.info.stream}:${m.seq}` });
    await write({ record, attempted: false, status: "failed", fresh: false });
    m.term();
  }

  /** One attempt (its slot taken); a first one still running after the grace has its pending record written meanwhile. */
  async function attempt(task: DeliveryTask, record: RecordKey, dest: DeliveryTarget): Promise<PostOutcome> {
    let early: Promise<number> | undefined;
    const grace = fresh(record)
      ? setTimeout(() => {
          early = write({ record, attempted: false, status: "pending", fresh: true });
          early.catch(() => undefined);
        }, RECORD_GRACE_MS)
      : undefined;
    const started = Date.now();
    try {
      const body = JSON.stringify(task.e);
      const headers = signedHeaders(dest.secret, task.e.id, Math.floor(Date.now() / 1000), body);
      // A client span per attempt; the receiver gets its `traceparent` (tracing on only).
      return await inSpan("webhook POST", { kind: SpanKind.CLIENT, attributes: { "http.request.method": "POST", "feeds.webhook.destination": task.d, "feeds.webhook.event": task.e.type } }, async (span) => {
        const outcome = await post(dest.url, body, { ...headers, ...traceHeaders() });
        if (outcome.status !== undefined) span?.setAttribute("http.response.status_code", outcome.status);
        if (!outcome.ok) span?.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error ?? `answered ${outcome.status}` });
        return outcome;
      });
    } finally {
      clearTimeout(grace);
      slots.release(task.d, Date.now() - started);
      if (early) await early;
    }
  }

  async function handle(m: JsMsg, detach: () => void): Promise<void> {
    const task = JSON.parse(new TextDecoder().decode(m.data)) as DeliveryTask;
    const record: RecordKey = {
      _id: task.r,
      tenant_id: task.t,
      event_id: task.e.id,
      event_type: task.e.type,
      destination_id: task.d,
      created_at: new Date(task.at),
    };
    // The tenant's cap: in its line (detached) while its tasks here keep ending; past the line or
    // stalled, back about when one ends (a backlog, like one in the queue; no record, no attempt).
    let keep: NodeJS.Timeout | undefined;
    const wait = () => {
      detach();
      keep = setInterval(() => m.working(), KEEP_MS);
    };
    const took = await tenants.take(task.t, tenantStallMs, wait).finally(() => clearInterval(keep));
    if (took !== "taken") return defer(m, record, tenants.deferMs(task.t), false);
    const since = Date.now();
    let held = true;
    const leave = () => {
      if (held) tenants.release(task.t, Date.now() - since);
      held = false;
    };
    try {
      await deliver(m, task, record, leave);
    } finally {
      leave();
    }
  }

  /** A task within its tenant's cap: its destination's slot, the attempt (then `leave` the cap), the outcome. */
  async function deliver(m: JsMsg, task: DeliveryTask, record: RecordKey, leave: () => void): Promise<void> {
    const dest = await destinations.forDelivery(task.t, task.d);
    // Deleted: nothing is delivered to it any more.
    if (!dest) return void (await write({ record, attempted: false, status: "failed", fresh: fresh(record) }));
    const wasHealthy = healthy.get(task.d) !== false;
    // However long the line takes, the task stays ours (JetStream would hand it out again).
    const keep = setInterval(() => m.working(), KEEP_MS);
    const took = await slots.take(task.d, wasHealthy ? STALL_MS : 0).finally(() => clearInterval(keep));
    if (took !== "taken") {
      // A healthy destination's long line: back about when a slot frees (a backlog, like one in
      // the queue). Failing or stalled: after one attempt's time, shown pending meanwhile.
      if (wasHealthy && took === "full") return defer(m, record, slots.deferMs(task.d), false);
      return defer(m, record, jitter(options.attemptTimeoutMs), true);
    }
    const outcome = await attempt(task, record, dest).finally(leave);
    healthy.set(task.d, outcome.ok);
    const change = (c: Pick<RecordChange, "attempted" | "status">) => write({ record, fresh: fresh(record), ...c });
    if (outcome.ok) outcomes.inc({ outcome: "delivered" });
    if (outcome.ok) return void (await change({ attempted: true, status: "published" }));
    const attempts = await change({ attempted: true, status: "pending" });
    if (outcome.refused) return giveUp(m, record, outcome.error ?? "refused address");
    if (attempts >= maxAttempts) return giveUp(m, record, outcome.error ?? `answered ${outcome.status}`);
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
    concurrency,
    // Our attempts are counted in the record; JetStream's count also holds deferrals and
    // failures of our own storage (those retry on the queue worker's short backoff).
    maxDeliver: 10_000,
    // Tasks waiting for a retry stay unacknowledged: a dead destination's backlog must not
    // reach the limit at which JetStream stops handing out every other destination's tasks.
    maxAckPending: 100_000,
    ackWaitMs: options.attemptTimeoutMs + STALL_MS + 20_000,
    ...(deps.beats ? { beats: { worker: "webhooks" as const, beats: deps.beats } } : {}),
  });
}
