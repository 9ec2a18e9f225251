import {
  connect,
  headers as natsHeaders,
  type JetStreamPublishOptions,
  type MsgHdrs,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
} from "nats";
import type { Config } from "./config.js";
import { traceHeaders } from "./tracing.js";

export interface Nats {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Replicas of every stream and consumer this process creates (NATS_REPLICAS). */
  replicas: number;
  /** Namespaced subject or stream name. */
  subject(...parts: string[]): string;
  stream(name: string): string;
  close(): Promise<void>;
}

/** The work queues of the system and their dead-letter streams (contract: `fanout`, `notify`;
 * ours: `webhooks`, one delivery task per event and destination). */
export const queueNames = ["fanout", "notify", "webhooks"] as const;
export type QueueName = (typeof queueNames)[number];

/** The servers of NATS_URL: one URL, or several comma-separated (the members of a cluster). */
export const natsServers = (url: string): string[] =>
  url
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

export async function connectNats(
  config: Pick<Config, "NATS_URL" | "FEEDS_NAMESPACE"> & Partial<Pick<Config, "NATS_REPLICAS">>,
  name: string,
): Promise<Nats> {
  const nc = await connect({
    servers: natsServers(config.NATS_URL),
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
    replicas: config.NATS_REPLICAS ?? 1,
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

/** How long a stream's creation waits for the cluster to have as many JetStream servers as replicas. */
const PLACEMENT_WAIT_MS = 60_000;

/** JetStream's "no suitable peers for placement" (10005): fewer JetStream servers up than replicas asked. */
const isNoPlacement = (err: unknown) => (err as { api_error?: { err_code?: number } } | null)?.api_error?.err_code === 10005;

/**
 * Creates a stream, or brings an existing one to the configured replica count (NATS moves its data).
 * While a cluster is still forming (a process started beside it, or during a rolling restart of its
 * servers) it has too few JetStream servers to place the replicas: that is waited out, up to
 * PLACEMENT_WAIT_MS, rather than failing the process.
 */
async function ensureStream(nats: Nats, name: string, subjects: string[], retention: RetentionPolicy) {
  for (let waited = 0, delay = 250; ; waited += delay, delay = Math.min(delay * 2, 2000)) {
    try {
      let info;
      try {
        info = await nats.jsm.streams.info(name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await nats.jsm.streams.add({ name, subjects, retention, storage: StorageType.File, num_replicas: nats.replicas });
        return;
      }
      if (info.config.num_replicas !== nats.replicas) await nats.jsm.streams.update(name, { ...info.config, num_replicas: nats.replicas });
      return;
    } catch (err) {
      if (!isNoPlacement(err) || waited >= PLACEMENT_WAIT_MS) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** JetStream's "stream not found" / "consumer not found" (10059, 10014), not a timeout or an outage. */
export function isNotFound(err: unknown): boolean {
  const code = (err as { api_error?: { err_code?: number } } | null)?.api_error?.err_code;
  return code === 10059 || code === 10014;
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

/**
 * JetStream publish options: message id `msgID`, and the trace context (`traceparent`) as message
 * headers: `trace` when given (a pending change's, kept from its writer), else the active span's.
 * Tracing off: the message id alone.
 */
export function publishOptions(msgID: string, trace: Record<string, string> | undefined = traceHeaders()): Partial<JetStreamPublishOptions> {
  if (!trace) return { msgID };
  const headers: MsgHdrs = natsHeaders();
  for (const [k, v] of Object.entries(trace)) headers.set(k, v);
  return { msgID, headers };
}
