import { AsyncLocalStorage } from "node:async_hooks";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { createTenantLabels, type TenantLabels } from "./tenant-labels.js";

// One Prometheus registry per process (the one-process system shares it across its modules),
// served in the text format on a port of its own, never the public API port. Every label value
// comes from our code (route templates, RPC names, queue and cache names, a bounded set of
// tenants), never from a client's string, so hostile input cannot grow the series.

/**
 * The work a piece of code runs for: a request's route template (`GET /v1/feeds/:group/:id`), an
 * RPC (`rpc:feeds.feed.v1.FeedService/ReadFeed`) in a service process, or nothing (background:
 * workers, relays, sweeps). Database commands are counted per work, so "commands per request"
 * is read apart from what background loops do meanwhile.
 */
export const workScope = new AsyncLocalStorage<{ work: string }>();
export const currentWork = (): string => workScope.getStore()?.work ?? "background";

/** Seconds; fine at the low end, where warm reads and in-process calls land. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds from a write's acknowledgement to its last fan-out chunk. */
const FANOUT_LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export interface Metrics {
  registry: Registry;
  /** Every command the process's MongoDB driver started, by command name and work (command monitoring). */
  mongoCommands: Counter<"command" | "work">;
  /** Seconds from a MongoDB command's start to its reply, by command name and outcome (ok, failed). */
  mongoCommandDuration: Histogram<"command" | "outcome">;
  /** 1, labelled with the build this process runs (BUILD_VERSION) and its Node.js version. */
  buildInfo: Gauge<"version" | "node_version">;
  /** Gateway requests: route template (`unmatched` for 404s), method, status. */
  httpDuration: Histogram<"route" | "method" | "status_code">;
  /** Calls served (in process or over gRPC): full service name, method, Connect code (`OK`). */
  rpcDuration: Histogram<"service" | "method" | "code">;
  /** Requests refused 429, by window: normal, batch (tenant), login, invite. */
  rateLimited: Counter<"kind">;
  /** Writes carrying an Idempotency-Key, by outcome (gateway/src/idempotency.ts). */
  idempotentRequests: Counter<"outcome">;
  /** Deliveries of a task this process received again (JetStream's count above one). */
  queueRedeliveries: Counter<"queue">;
  /** Work-queue tasks this process finished, by queue, consumer and outcome. */
  queueTasks: Counter<"queue" | "consumer" | "outcome">;
  /** Seconds from a task's publish to its acknowledgement as done, by queue and consumer. */
  queueTaskLatency: Histogram<"queue" | "consumer">;
  /** The longest of those since the process started. */
  queueTaskLatencyMax: Gauge<"queue" | "consumer">;
  /** Fan-out lag by tenant; only `fanoutLagTenants` decides the label. */
  fanoutLag: Histogram<"tenant">;
  fanoutLagTenants: TenantLabels;
  /** Webhook delivery attempts by outcome (delivered, retrying, dead_lettered). */
  webhookDeliveries: Counter<"outcome">;
  /** Cache lookups per key: head, activity, user, object and the other read caches. */
  cacheRequests: Counter<"cache" | "result">;
  /** Live streams this gateway process holds open (docs/stream.md). */
  streamsOpen: Gauge;
  /** Live streams ended with a `reset`, by reason (cursor_too_old does not end one but is counted). */
  streamResets: Counter<"reason">;
}

export function createMetrics(opts: { topTenants?: number } = {}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const fanoutLag = new Histogram({
    name: "feeds_fanout_lag_seconds",
    help: "Seconds from an activity write's acknowledgement to its last fan-out chunk written, by tenant (the top tenants by volume; the rest under `other`)",
    labelNames: ["tenant"] as const,
    buckets: FANOUT_LAG_BUCKETS,
    registers,
  });
  return {
    registry,
    mongoCommands: new Counter({
      name: "feeds_mongodb_commands_total",
      help: "MongoDB commands started by this process's driver, by command name and the work they ran for",
      labelNames: ["command", "work"] as const,
      registers,
    }),
    mongoCommandDuration: new Histogram({
      name: "feeds_mongodb_command_duration_seconds",
      help: "Seconds from a MongoDB command's start to its reply as this process's driver saw it, by command name and outcome (ok, failed)",
      labelNames: ["command", "outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    buildInfo: new Gauge({
      name: "feeds_build_info",
      help: "Always 1: the build this process runs (BUILD_VERSION) and its Node.js version, as labels",
      labelNames: ["version", "node_version"] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: "feeds_http_request_duration_seconds",
      help: "Gateway requests by route template (`unmatched` when none matched), method and status code",
      labelNames: ["route", "method", "status_code"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    rpcDuration: new Histogram({
      name: "feeds_rpc_duration_seconds",
      help: "RPC calls served by this process, by service, method and code (OK or the Connect code name)",
      labelNames: ["service", "method", "code"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    streamsOpen: new Gauge({
      name: "feeds_stream_open",
      help: "Live streams (GET /v1/stream) this gateway process holds open",
      registers,
    }),
    streamResets: new Counter({
      name: "feeds_stream_resets_total",
      help: "Live stream reset frames by reason: cursor_too_old, consumer_too_slow, server_draining",
      labelNames: ["reason"] as const,
      registers,
    }),
    rateLimited: new Counter({
      name: "feeds_rate_limited_total",
      help: "Requests refused with 429, by rate window (normal, batch, login, invite)",
      labelNames: ["kind"] as const,
      registers,
    }),
    idempotentRequests: new Counter({
      name: "feeds_idempotent_requests_total",
      help: "Writes with an Idempotency-Key by outcome: kept (answer stored), released (5xx, 401 or 429: not stored), replayed, conflict (other request or answer not kept), in_flight (429 while the first runs)",
      labelNames: ["outcome"] as const,
      registers,
    }),
    queueRedeliveries: new Counter({
      name: "feeds_queue_redeliveries_total",
      help: "Work-queue deliveries this process received for a task delivered before",
      labelNames: ["queue"] as const,
      registers,
    }),
    queueTasks: new Counter({
      name: "feeds_queue_tasks_total",
      help: "Work-queue tasks this process handled, by queue, consumer (fanout: worker, follow; notify: events; webhooks: deliveries) and outcome (done, deferred, retried, dead_lettered)",
      labelNames: ["queue", "consumer", "outcome"] as const,
      registers,
    }),
    queueTaskLatency: new Histogram({
      name: "feeds_queue_task_latency_seconds",
      help: "Seconds from a work-queue task's publish to its acknowledgement as done (a follow's history copy, an event's notification, a webhook delivery), by queue and consumer",
      labelNames: ["queue", "consumer"] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    }),
    queueTaskLatencyMax: new Gauge({
      name: "feeds_queue_task_latency_max_seconds",
      help: "The longest publish-to-done time of a work-queue task this process handled since it started, by queue and consumer",
      labelNames: ["queue", "consumer"] as const,
      registers,
    }),
    fanoutLag,
    fanoutLagTenants: createTenantLabels(opts.topTenants ?? 10, {
      forget: (tenant) => fanoutLag.remove({ tenant }),
    }),
    webhookDeliveries: new Counter({
      name: "feeds_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome: delivered (2xx), retrying (failed, tried again later), dead_lettered (failed for good)",
      labelNames: ["outcome"] as const,
      registers,
    }),
    cacheRequests: new Counter({
      name: "feeds_cache_requests_total",
      help: "Cache lookups per key, by cache (head, activity, user, object, ...) and result (hit, miss)",
      labelNames: ["cache", "result"] as const,
      registers,
    }),
  };
}

let shared: Metrics | undefined;

/**
 * This process's metrics. The scrape is per process, so the registry is too: code anywhere in
 * the process counts into it without each factory carrying it (`createInfra` sets the tenant
 * bound from the configuration).
 */
export const processMetrics = (): Metrics => (shared ??= createMetrics());

/** Observes a fan-out's lag under its tenant's bounded label. */
export function observeFanoutLag(metrics: Metrics, tenantId: string, seconds: number): void {
  metrics.fanoutLag.observe({ tenant: metrics.fanoutLagTenants.label(tenantId) }, seconds);
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/** A probe served beside the metrics: 200 with its body when ok, 503 otherwise. */
export type Probe = () => Promise<{ ok: boolean; body?: unknown }>;

/**
 * `GET /metrics` on `host:port` (port 0: any free port; the answer names the one taken), and the
 * process's own probes (`/livez`, `/readyz`) when given: on this port, never the API's.
 */
export async function serveMetrics(metrics: Metrics, opts: { host: string; port: number; probes?: Record<string, Probe> }): Promise<MetricsServer> {
  const probes = new Map(Object.entries(opts.probes ?? {}));
  const server = createServer((req, res) => {
    const path = req.url?.split("?")[0] ?? "";
    const probe = req.method === "GET" ? probes.get(path) : undefined;
    if (probe) {
      probe().then(
        (r) => res.writeHead(r.ok ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(r.body ?? { ok: r.ok })),
        () => res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ ok: false })),
      );
      return;
    }
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
