import { AsyncLocalStorage } from "node:async_hooks";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Counter, Registry } from "prom-client";

// One Prometheus registry per process (the one-process system shares it across its modules),
// served in the text format on a port of its own, never the public API port.

/**
 * The work a piece of code runs for: a request's route template (`GET /v1/feeds/:group/:id`), an
 * RPC (`rpc:feeds.feed.v1.FeedService/ReadFeed`) in a service process, or nothing (background:
 * workers, relays, sweeps). Database commands are counted per work, so "commands per request"
 * is read apart from what background loops do meanwhile.
 */
export const workScope = new AsyncLocalStorage<{ work: string }>();
export const currentWork = (): string => workScope.getStore()?.work ?? "background";

export interface Metrics {
  registry: Registry;
  /** Every command the process's MongoDB driver started, by command name and work (command monitoring). */
  mongoCommands: Counter<"command" | "work">;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const mongoCommands = new Counter({
    name: "feeds_mongodb_commands_total",
    help: "MongoDB commands started by this process's driver, by command name and the work they ran for",
    labelNames: ["command", "work"] as const,
    registers: [registry],
  });
  return { registry, mongoCommands };
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/** `GET /metrics` on `host:port` (port 0: any free port; the answer names the one taken). */
export async function serveMetrics(metrics: Metrics, opts: { host: string; port: number }): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    if (req.method !== "GET" || req.url?.split("?")[0] !== "/metrics") {
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
