import { AckPolicy, DeliverPolicy, Events, type ConsumerMessages, type JsMsg, type NatsConnection } from "nats";
import type { Logger } from "./log.js";
import { someCause } from "./errors.js";
import { within } from "./time.js";
import { processMetrics } from "./metrics.js";
import { isNotFound, type Nats, type QueueName } from "./nats.js";
import { inSpan, SpanKind, tracingOn } from "./tracing.js";
import { ALIVE_MS, BEAT_MS, type WorkerBeats, type WorkerName } from "./worker-beats.js";

// One consumer loop for every JetStream work queue of the system: bounded concurrency, explicit
// acks, growing backoff with jitter between deliveries, and the dead-letter stream once a task
// has been delivered `maxDeliver` times. Handlers throw to be retried and must be idempotent. A
// failure that is NATS's own (a stream the handler publishes to has no leader while a cluster
// elects one, the connection is down) is not the task's fault: it is retried for longer before
// the task is given up.

export interface QueueWorkerOptions {
  nats: Nats;
  log: Logger;
  queue: QueueName;
  /** Durable consumer name, unique per kind of task on the queue. */
  durable: string;
  /** The subject (under `<ns>.<queue>.`) this consumer takes, e.g. "event". */
  subject: string;
  /**
   * Handles one task. Answering `{ laterMs }` puts it back to be delivered again that much later
   * (not a failure: no warning, no backoff; it still counts as a delivery toward `maxDeliver`).
   * `detach()`: from then on the task no longer counts toward `concurrency`, so the worker takes
   * further tasks while it waits (for a handler about to wait on something other than this
   * worker's capacity, bounded by the handler); it is still acknowledged when `handle` settles.
   */
  handle(m: JsMsg, detach: () => void): Promise<void | { laterMs: number }>;
  maxDeliver?: number;
  /** Waits before the 2nd, 3rd, ... delivery; the last one repeats. Jitter of ±25% is added. */
  backoffMs?: readonly number[];
  /** How long JetStream waits for an ack (or a heartbeat) before it redelivers a task elsewhere. */
  ackWaitMs?: number;
  /**
   * Heartbeats (`m.working()`) every third of the ack wait while a task runs, so that a short ack
   * wait finds a dead worker's tasks quickly without redelivering a long task that still runs.
   * The client then buffers no more than `concurrency` tasks unheard (each until a running one ends).
   */
  heartbeat?: boolean;
  /** Tasks handled at once by this process. */
  concurrency?: number;
  /** Beats while the consumer loop runs, so that readiness can name a worker that stopped. */
  beats?: { worker: WorkerName; beats: WorkerBeats };
  /** Delivered, unacknowledged tasks JetStream allows (a task waiting for its retry counts). */
  maxAckPending?: number;
}

export interface QueueWorker {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Epoch ms of the last time the consumer loop was seen alive (readiness uses it). */
  lastAlive(): number;
}

const DEFAULT_BACKOFF_MS = [250, 500, 1000, 2000] as const;
/**
 * Deliveries beyond `maxDeliver` a task may take while its failures are NATS being unavailable
 * (natsUnavailable): at a last backoff of 2 s, a couple of minutes. A NATS cluster takes 5 to 12 s
 * to elect a new leader for a stream it lost one of, and `maxDeliver` deliveries at the default
 * backoffs span about 4 s. A task whose handler kills its process is delivered this many more
 * times too (JetStream cannot tell why it heard nothing).
 */
export const OUTAGE_DELIVERIES = 60;
/** How long one pull request waits on the server; also the client's wait between consumer checks after a reconnect. */
const PULL_EXPIRES_MS = 5_000;
const jitter = (ms: number) => Math.round(ms * (0.75 + Math.random() * 0.5));
/** How long `stop()` waits for the tasks in hand to finish before it returns anyway. */
const STOP_WAIT_MS = 10_000;

/** Whether each connection is up: false from a disconnect to the reconnect, and once closed. */
const links = new WeakMap<NatsConnection, { up: boolean }>();
function linkOf(nc: NatsConnection): { up: boolean } {
  let link = links.get(nc);
  if (!link) {
    const state = { up: true };
    links.set(nc, (link = state));
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === Events.Disconnect) state.up = false;
        else if (s.type === Events.Reconnect) state.up = true;
      }
    })().catch(() => undefined);
  }
  return link;
}

/** This process's started, not yet stopped, queue workers. */
const running = new Set<QueueWorker>();

/**
 * Whether this process's consumer loops all run: at least one started, and each seen alive (its
 * consume loop beating, so connected to NATS and pulling) within ALIVE_MS. A worker process's
 * health follows it, so that Kubernetes sees a worker whose loop stopped as not ready.
 */
export function consumersServing(now = Date.now()): boolean {
  if (running.size === 0) return false;
  for (const w of running) if (now - w.lastAlive() > ALIVE_MS) return false;
  return true;
}

const unavailableCodes = new Set(["503", "408", "TIMEOUT", "DISCONNECT", "CONNECTION_CLOSED", "CONNECTION_DRAINING", "CONNECTION_REFUSED", "CONNECTION_TIMEOUT"]);

/**
 * True when `err` (or an error it was caused by) is NATS being unavailable rather than the task
 * failing: no responders (a stream without a leader), a request timeout, a lost connection.
 */
export const natsUnavailable = (err: unknown): boolean =>
  someCause(err, (e) => e.name === "NatsError" && typeof e.code === "string" && unavailableCodes.has(e.code));

export function createQueueWorker(o: QueueWorkerOptions): QueueWorker {
  const { nats, log, queue } = o;
  const maxDeliver = o.maxDeliver ?? 5;
  const backoff = o.backoffMs ?? DEFAULT_BACKOFF_MS;
  const concurrency = o.concurrency ?? 8;
  const ackWaitMs = o.ackWaitMs ?? 30_000;
  const stream = nats.stream(queue);
  const durable = `${stream}_${o.durable}`;
  let messages: ConsumerMessages | undefined;
  let stopped = false;
  let alive = 0;
  const redeliveries = processMetrics().queueRedeliveries.labels({ queue });
  const tasks = processMetrics().queueTasks;
  const finished = (outcome: "done" | "deferred" | "retried" | "dead_lettered") => tasks.inc({ queue, consumer: o.durable, outcome });
  const latency = processMetrics().queueTaskLatency.labels({ queue, consumer: o.durable });
  const latencyMax = processMetrics().queueTaskLatencyMax.labels({ queue, consumer: o.durable });
  let longest = 0;
  /** Publish to done: what a task's side effect waited (queue, retries and the handler). */
  function timeDone(m: JsMsg): void {
    const s = Math.max(0, Date.now() - m.info.timestampNanos / 1e6) / 1000;
    latency.observe(s);
    if (s > longest) latencyMax.set((longest = s));
  }

  async function deadLetter(m: JsMsg, err: unknown) {
    log.error({ err, queue, deliveries: m.info.redeliveryCount }, "task dead-lettered");
    try {
      await nats.js.publish(nats.subject(`${queue}_dlq`, o.subject), m.data, { msgID: `dlq:${m.info.stream}:${m.seq}` });
      m.term();
      finished("dead_lettered");
    } catch (e) {
      log.error({ err: e, queue }, "dead-lettering failed; will retry");
      m.nak(jitter(backoff[backoff.length - 1] ?? 1000));
    }
  }

  async function run(m: JsMsg, detach: () => void): Promise<void> {
    if (m.info.redeliveryCount > 1) redeliveries.inc();
    const working = o.heartbeat
      ? setInterval(() => {
          try {
            m.working();
          } catch {
            /* connection gone: the task is redelivered after the ack wait */
          }
        }, ackWaitMs / 3)
      : undefined;
    try {
      // A span per delivery, a child of the publisher's (the message's `traceparent`).
      const later = await (!tracingOn() ? o.handle(m, detach) : inSpan(
        `${queue} process`,
        {
          kind: SpanKind.CONSUMER,
          parent: m.headers,
          attributes: { "messaging.system": "nats", "messaging.destination.name": m.subject, "messaging.consumer.group.name": o.durable, "messaging.operation.type": "process", "feeds.deliveries": m.info.redeliveryCount },
        },
        () => o.handle(m, detach),
      ));
      if (later) {
        // Whole milliseconds: the server reads a fractional delay as none (an immediate redelivery).
        m.nak(Math.max(1, Math.ceil(later.laterMs)));
        finished("deferred");
        return;
      }
      m.ack();
      finished("done");
      timeDone(m);
    } catch (err) {
      const deliveries = m.info.redeliveryCount;
      if (deliveries >= (natsUnavailable(err) ? maxDeliver + OUTAGE_DELIVERIES : maxDeliver)) return deadLetter(m, err);
      log.warn({ err, queue, deliveries }, "task failed; retrying");
      m.nak(jitter(backoff[Math.min(deliveries - 1, backoff.length - 1)] ?? 1000));
      finished("retried");
    } finally {
      clearInterval(working);
    }
  }

  async function ensureConsumer() {
    const ackWait = ackWaitMs * 1_000_000;
    let info;
    try {
      info = await nats.jsm.consumers.info(stream, durable);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await nats.jsm.consumers.add(stream, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        max_deliver: maxDeliver + OUTAGE_DELIVERIES,
        ...(o.maxAckPending ? { max_ack_pending: o.maxAckPending } : {}),
        ack_wait: ackWait,
        filter_subject: nats.subject(queue, o.subject),
        num_replicas: nats.replicas,
      });
      return;
    }
    // A consumer made by an older release, or under another NATS_REPLICAS, keeps its ack wait,
    // deliveries and replica count unless told otherwise (0 replicas: made without a count, which on
    // a one-replica stream is 1).
    const replicas = info.config.num_replicas || 1;
    const deliveries = maxDeliver + OUTAGE_DELIVERIES;
    if (info.config.ack_wait !== ackWait || info.config.max_deliver !== deliveries || replicas !== nats.replicas) {
      await nats.jsm.consumers.update(stream, durable, { ack_wait: ackWait, max_deliver: deliveries, num_replicas: nats.replicas });
    }
  }

  /** Tasks of one consumer loop: all still running, and how many of them count toward `concurrency`. */
  const newPool = () => ({ inflight: new Set<Promise<void>>(), counted: 0, freed: undefined as (() => void) | undefined });
  type Pool = ReturnType<typeof newPool>;

  /** Runs `m`, then waits until fewer than `concurrency` tasks count. */
  async function admit(m: JsMsg, pool: Pool) {
    alive = Date.now();
    let counts = true;
    const detach = () => {
      if (!counts) return;
      counts = false;
      pool.counted--;
      pool.freed?.();
    };
    pool.counted++;
    const p = run(m, detach).finally(() => {
      pool.inflight.delete(p);
      detach();
    });
    pool.inflight.add(p);
    while (pool.counted >= concurrency) await new Promise<void>((r) => (pool.freed = r));
    pool.freed = undefined;
  }

  async function loop() {
    while (!stopped) {
      try {
        await ensureConsumer();
        const consumer = await nats.js.consumers.get(stream, durable);
        // With heartbeats, a short buffer: a task waiting there for a free slot sends none.
        // Pulls expire after PULL_EXPIRES_MS (nats.js's default is 30 s). After NATS restarts, the
        // client checks each consumer before pulling again and, if the check fails (JetStream
        // still recovering), waits one expiry before the next check: with 30 s, a worker could sit
        // idle that long after NATS was back.
        messages = await consumer.consume({ max_messages: o.heartbeat ? concurrency : Math.max(concurrency * 2, 16), expires: PULL_EXPIRES_MS });
        // Alive while the loop runs on a connection that is up: a consume iterator outlives its
        // connection's outage (and a closed connection), and must not beat meanwhile.
        const link = linkOf(nats.nc);
        const beat = setInterval(() => {
          if (!link.up || nats.nc.isClosed()) return;
          alive = Date.now();
          o.beats?.beats.beat(o.beats.worker).catch(() => undefined);
        }, BEAT_MS);
        alive = Date.now();
        await o.beats?.beats.beat(o.beats.worker).catch(() => undefined);
        const pool = newPool();
        try {
          for await (const m of messages) await admit(m, pool);
          await Promise.all(pool.inflight);
        } finally {
          clearInterval(beat);
        }
      } catch (err) {
        if (!stopped) log.warn({ err: String(err), queue }, "consumer interrupted; resuming");
      }
      if (!stopped) await new Promise((r) => setTimeout(r, 500));
    }
  }

  let looping: Promise<void> | undefined;
  const worker: QueueWorker = {
    async start() {
      await ensureConsumer();
      // Alive from here: NATS answered and the consumer exists. The loop's first beat comes after
      // a few more round trips, and a worker process answers its readiness probe as soon as it
      // listens (a probe in that gap said NOT_SERVING under load).
      alive = Date.now();
      looping = loop();
      running.add(worker);
    },
    /** Takes no further task and waits (at most STOP_WAIT_MS) for those in hand to be acknowledged. */
    async stop() {
      stopped = true;
      running.delete(worker);
      await messages?.close();
      await within(STOP_WAIT_MS, looping ?? Promise.resolve()).catch(() => undefined);
    },
    lastAlive: () => alive,
  };
  return worker;
}
