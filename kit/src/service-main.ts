import { loadConfig, type Config, type ServiceName } from "./config.js";
import { createInternalAuth } from "./internal-auth.js";
import { keysFromConfig } from "./service-keys.js";
import { createLogger, type Logger } from "./log.js";
import { processMetrics, serveMetrics, type Metrics } from "./metrics.js";
import { connectMongo, type Mongo } from "./mongo.js";
import { connectRedis, type RedisConn } from "./redis.js";
import { connectNats, type Nats } from "./nats.js";
import { serveModules, type HealthStatus, type ServiceModule } from "./rpc.js";
import { consumersServing } from "./queue-worker.js";
import { HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import { createPeerClients, type Clients } from "./clients.js";
import { flushTraces } from "./tracing.js";

export interface Infra {
  config: Config;
  log: Logger;
  metrics: Metrics;
  mongo(): Promise<Mongo>;
  redis(): Promise<RedisConn>;
  nats(): Promise<Nats>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retries a connection until it succeeds: a process started before its dependency waits for it. */
async function retrying<T>(log: Logger, what: string, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt === 1 || attempt % 20 === 0) log.warn({ err: String(err), attempt }, `waiting for ${what}`);
      await sleep(Math.min(250 * attempt, 2000));
    }
  }
}

/** Connects each dependency once, on first use, and closes what was opened. */
export function createInfra(config: Config, log: Logger, name: string): Infra {
  let mongo: Promise<Mongo> | undefined;
  let redis: Promise<RedisConn> | undefined;
  let nats: Promise<Nats> | undefined;
  const metrics = processMetrics();
  metrics.fanoutLagTenants.setLimit(config.METRICS_TOP_TENANTS);
  metrics.buildInfo.set({ version: config.BUILD_VERSION, node_version: process.version }, 1);
  return {
    config,
    log,
    metrics,
    mongo: () => (mongo ??= retrying(log, "mongodb", () => connectMongo(config, metrics))),
    redis: () => (redis ??= retrying(log, "redis", () => connectRedis(config))),
    nats: () => (nats ??= retrying(log, "nats", () => connectNats(config, name))),
    async close() {
      await Promise.allSettled([
        mongo?.then((m) => m.close()),
        redis?.then((r) => r.close()),
        nats?.then((n) => n.close()),
      ]);
    },
  };
}

/**
 * How a service's module is built from a process's infrastructure and its peers (the other
 * services, wherever they run): one function per service, used by its own main and by any
 * process that runs it beside others.
 */
export type ServiceBuild = (infra: Infra, peers: () => Clients) => Promise<ServiceModule>;

/**
 * Entry point of a standalone service process: connect, serve gRPC on GRPC_PORT, stop on signals.
 * FEEDS_ROLE picks what runs: the routes, the module's background work (`start`), or both.
 */
export async function runServiceMain(name: ServiceName, build: ServiceBuild): Promise<void> {
  const config = loadConfig();
  const role = config.FEEDS_ROLE;
  // Before connecting anything: the keys to sign as this process and to verify its callers. A
  // worker signs as `<service>-worker` and serves grpc.health.v1 alone, so it verifies no one.
  const signer = role === "worker" ? (`${name}-worker` as const) : name;
  const auth = createInternalAuth(keysFromConfig(config, signer, role === "worker" ? undefined : name));
  const log = createLogger(config, role === "all" ? name : `${name}:${role}`);
  const infra = createInfra(config, log, name);
  const module = await build(infra, createPeerClients(config, auth, signer));
  const background = role !== "api" ? module.start?.bind(module) : undefined;
  if (role === "worker" && !background) {
    throw new Error(`invalid configuration:\n  FEEDS_ROLE: the ${name} service has no background work to run as a worker`);
  }
  // A worker process serves only grpc.health.v1 (for probes), once its work has started.
  if (role === "worker") await background?.();
  const served: ServiceModule = role === "worker" ? { name, routes: () => undefined } : module;
  // A worker is ready while its consumer loops run (connected to NATS and pulling); `liveness`
  // answers while the process does, so that an outage of NATS makes it unready, not restarted.
  let stopping = false;
  const health: HealthStatus | undefined =
    role === "worker"
      ? (service) =>
          service === "liveness" || (!stopping && consumersServing()) ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING
      : (service) => (service === "liveness" || !stopping ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING);
  const server = await serveModules([served], { host: config.HOST, port: config.GRPC_PORT, log, auth, health });
  if (role === "all") await background?.();
  const metricsServer = await serveMetrics(infra.metrics, { host: config.HOST, port: config.METRICS_PORT });
  log.info({ port: server.port, metrics: metricsServer.port, role }, `${name} service listening`);
  // Parent processes read this line to learn the ports.
  process.stdout.write(`${JSON.stringify({ service: name, role, port: server.port, metrics: metricsServer.port })}\n`);
  // SIGTERM: unready at once, callers are told to go away and the calls in flight finish, then the
  // background work finishes the tasks in hand, then the connections close.
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // Routes first: callers move to other processes and the calls in hand finish (what they use
    // is still running); then the background work finishes its tasks in hand.
    await server.close();
    if (background) await module.stop?.();
    await metricsServer.close();
    await infra.close();
    // The spans still batched are exported (tracing on only).
    await flushTraces();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}
