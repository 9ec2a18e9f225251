import { randomBytes } from "node:crypto";
import { flushTraces, fromRpcError, registerQueueGauges, scope, serveMetrics, type Clients, type Infra, type ServiceModule } from "@feeds/kit";
import { buildGateway } from "./app.js";
import { createReadiness, registerReadinessGauge } from "./readiness.js";

export interface GatewayRun {
  infra: Infra;
  /** Every service, wherever it runs: the caller decides (this package reaches none by itself). */
  clients: Clients;
  /** Services this process runs beside the gateway: started before it listens, stopped after it closes. */
  alongside?: ServiceModule[];
}

type Staff = { email: string; password?: string; created: boolean };

/** The first platform staff operator (idempotent); a generated password is answered once. */
async function bootstrapStaff({ config, log }: Infra, operators: Clients["operators"]): Promise<Staff | null> {
  if (!config.BOOTSTRAP_STAFF_EMAIL) return null;
  const password = config.BOOTSTRAP_STAFF_PASSWORD ?? randomBytes(12).toString("base64url");
  try {
    const res = await operators.ensureStaff(
      { email: config.BOOTSTRAP_STAFF_EMAIL, name: "Platform staff", password },
      scope({ caller: { kind: "system" } }),
    );
    const staff: Staff = { email: config.BOOTSTRAP_STAFF_EMAIL, created: res.created };
    if (res.created && !config.BOOTSTRAP_STAFF_PASSWORD) staff.password = password;
    return staff;
  } catch (e) {
    log.error({ err: fromRpcError(e) }, "could not create the bootstrap staff operator");
    return null;
  }
}

/**
 * A gateway process: the app on PORT and metrics on METRICS_PORT, the ready line its parent reads
 * on stdout, and a clean stop on SIGTERM or SIGINT.
 */
export async function runGateway({ infra, clients, alongside = [] }: GatewayRun): Promise<void> {
  const { config, log } = infra;
  const [mongo, redis, nats] = await Promise.all([infra.mongo(), infra.redis(), infra.nats()]);
  const app = await buildGateway({ config, log, clients, mongo, redis, nats });
  for (const m of alongside) await m.start?.();
  const staff = await bootstrapStaff(infra, clients.operators);

  const address = await app.listen({ port: config.PORT, host: config.HOST });
  const url = address.replace("[::1]", "127.0.0.1");
  // The queues are the system's: the gateway exports their depth (services export their own work).
  registerQueueGauges(infra.metrics, nats, log);
  const readiness = createReadiness({ config, clients, mongo, redis, nats });
  registerReadinessGauge(infra.metrics, readiness, log);
  let stopping = false;
  // The process's own probes, on the metrics port (the public API gains no route): live while it
  // runs; ready while it can serve its routes and is not stopping. /v1/health/ready keeps the
  // whole system's meaning for monitoring.
  const metricsServer = await serveMetrics(infra.metrics, {
    host: config.HOST,
    port: config.METRICS_PORT,
    probes: {
      "/livez": async () => ({ ok: true }),
      "/readyz": async () => {
        if (stopping) return { ok: false, body: { ok: false, stopping: true } };
        const r = await readiness.checkOwn();
        return { ok: r.ok, body: r };
      },
    },
  });
  log.info({ url, metrics: metricsServer.port, services: alongside.map((m) => m.name) }, "gateway listening");
  // Parent processes (npm start, the tests) read this line.
  process.stdout.write(`${JSON.stringify({ ready: true, url, metrics: metricsServer.port, staff })}\n`);

  // SIGTERM: unready at once; the server stops accepting, answers the requests in flight and
  // closes idle connections; then the services beside it finish their background work.
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // Keep-alive connections whose request was in flight become idle once answered; Node closes
    // idle connections only once, when closing starts, and a client may hold an idle one for as
    // long as the server's keep-alive (72 s): close them as they become idle.
    const idle = setInterval(() => app.server.closeIdleConnections(), 100);
    await app.close();
    clearInterval(idle);
    await metricsServer.close();
    for (const m of alongside) await m.stop?.();
    await infra.close();
    // The spans still batched are exported (tracing on only).
    await flushTraces();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}
