import type { Logger } from "./log.js";
import type { Metrics } from "./metrics.js";
import { queueDepth, queueNames, type Nats, type QueueDepth, type QueueName } from "./nats.js";
import { cachedRead, registerScrapedGauge } from "./scraped-gauge.js";

// The work queues' depth as gauges, read from JetStream when scraped. The figures are the
// system's, not a process's: one process exports them (the gateway).

interface QueueState extends QueueDepth {
  /** Messages delivered more than once and not yet acknowledged, summed over the queue's consumers. */
  redelivered: number;
}

async function queueState(nats: Nats, queue: QueueName): Promise<QueueState> {
  const [depth, consumers] = await Promise.all([queueDepth(nats, queue), nats.jsm.consumers.list(nats.stream(queue)).next()]);
  return { ...depth, redelivered: consumers.reduce((n, c) => n + c.num_redelivered, 0) };
}

export function registerQueueGauges(metrics: Metrics, nats: Nats, log: Logger, opts: { maxAgeMs?: number } = {}): void {
  const read = cachedRead(() => Promise.all(queueNames.map((q) => queueState(nats, q))), opts.maxAgeMs ?? 2000);
  const onError = (err: unknown) => log.warn({ err: String(err) }, "queue depth unavailable for metrics");
  const gauge = (name: string, help: string, value: (s: QueueState) => number) =>
    registerScrapedGauge(metrics, { name, help, labelNames: ["queue"] }, read, (states) => states.map((s) => [{ queue: s.queue }, value(s)]), onError);
  gauge("feeds_queue_pending_messages", "Tasks in the work queue not yet acknowledged (JetStream stream messages, in flight included)", (s) => s.pending);
  gauge("feeds_queue_dlq_depth", "Tasks in the queue's dead-letter stream", (s) => s.dlq_depth);
  gauge(
    "feeds_queue_redelivered_messages",
    "Tasks delivered more than once and not yet acknowledged (JetStream consumers' num_redelivered)",
    (s) => s.redelivered,
  );
}
