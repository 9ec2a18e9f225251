import {
  connect,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
} from "nats";
import type { Config } from "./config.js";

export interface Nats {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Namespaced subject or stream name. */
  subject(...parts: string[]): string;
  stream(name: string): string;
  close(): Promise<void>;
}

/** The work queues of the system and their dead-letter streams (contract: `fanout`, `notify`;
 * ours: `webhooks`, one delivery task per event and destination). */
export const queueNames = ["fanout", "notify", "webhooks"] as const;
export type QueueName = (typeof queueNames)[number];

export async function connectNats(config: Pick<Config, "NATS_URL" | "FEEDS_NAMESPACE">, name: string): Promise<Nats> {
  const nc = await connect({
    servers: config.NATS_URL,
    name,
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    timeout: 2000,
    // Every request (each JetStream publish and ack) would otherwise build three Error objects
    // for their stack traces: a measurable share of a busy worker's CPU. A timeout still fails
    // with its message; only the caller's async stack is lost.
    noAsyncTraces: true,
  });
  const ns = config.FEEDS_NAMESPACE;
  const jsm = await nc.jetstreamManager({ timeout: 2000 });
  return {
    nc,
    js: nc.jetstream({ timeout: 2000 }),
    jsm,
    subject: (...parts) => [ns, ...parts].join("."),
    stream: (n) => `${ns}_${n}`,
    close: () => nc.drain(),
  };
}

/** Creates (idempotently) a work queue and its dead-letter stream. */
export async function ensureQueue(nats: Nats, q: QueueName): Promise<void> {
  await ensureStream(nats, nats.stream(q), [nats.subject(q, ">")], RetentionPolicy.Workqueue);
  await ensureStream(nats, nats.stream(`${q}_dlq`), [nats.subject(`${q}_dlq`, ">")], RetentionPolicy.Limits);
}

async function ensureStream(nats: Nats, name: string, subjects: string[], retention: RetentionPolicy) {
  try {
    await nats.jsm.streams.info(name);
  } catch {
    await nats.jsm.streams.add({ name, subjects, retention, storage: StorageType.File });
  }
}

export interface QueueDepth {
  queue: QueueName;
  pending: number;
  dlq_depth: number;
}

/** Pending = messages waiting in the work queue; dlq_depth = messages in its dead-letter stream. */
export async function queueDepth(nats: Nats, queue: QueueName): Promise<QueueDepth> {
  const [work, dlq] = await Promise.all([
    nats.jsm.streams.info(nats.stream(queue)),
    nats.jsm.streams.info(nats.stream(`${queue}_dlq`)),
  ]);
  return { queue, pending: work.state.messages, dlq_depth: dlq.state.messages };
}
