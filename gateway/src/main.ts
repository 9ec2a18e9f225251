import { randomBytes } from "node:crypto";
import { createInfra, createLogger, fromRpcError, loadConfig, registerQueueGauges, scope, serveMetrics } from "@feeds/kit";
import { buildGateway } from "./app.js";
import { createReadiness, registerReadinessGauge } from "./readiness.js";
import { connectServices } from "./system.js";

// The system's entry point: the gateway plus every service not named by a <SERVICE>_URL.
const config = loadConfig();
const log = createLogger(config, "gateway");
const infra = createInfra(config, log, "gateway");
const [mongo, redis, nats] = await Promise.all([infra.mongo(), infra.redis(), infra.nats()]);
const { clients, modules } = await connectServices(infra);
const app = await buildGateway({ config, log, clients, mongo, redis, nats });
for (const m of modules) await m.start?.();

// The first platform staff operator (idempotent); a generated password is printed once.
let staff: { email: string; password?: string; created: boolean } | null = null;
if (config.BOOTSTRAP_STAFF_EMAIL) {
  const password = config.BOOTSTRAP_STAFF_PASSWORD ?? randomBytes(12).toString("base64url");
  try {
    const res = await clients.operators.ensureStaff(
      { email: config.BOOTSTRAP_STAFF_EMAIL, name: "Platform staff", password },
      scope({ caller: { kind: "system" } }),
    );
    staff = { email: config.BOOTSTRAP_STAFF_EMAIL, created: res.created };
    if (res.created && !config.BOOTSTRAP_STAFF_PASSWORD) staff.password = password;
  } catch (e) {
    log.error({ err: fromRpcError(e) }, "could not create the bootstrap staff operator");
  }
}

const address = await app.listen({ port: config.PORT, host: config.HOST });
const url = address.replace("[::1]", "127.0.0.1");
// The queues are the system's: the gateway exports their depth (services export their own work).
registerQueueGauges(infra.metrics, nats, log);
registerReadinessGauge(infra.metrics, createReadiness({ config, clients, mongo, redis, nats }), log);
const metricsServer = await serveMetrics(infra.metrics, { host: config.HOST, port: config.METRICS_PORT });
log.info({ url, metrics: metricsServer.port, services: modules.map((m) => m.name) }, "gateway listening");
// Parent processes (npm start, the tests) read this line.
process.stdout.write(`${JSON.stringify({ ready: true, url, metrics: metricsServer.port, staff })}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await app.close();
  await metricsServer.close();
  for (const m of modules) await m.stop?.();
  await infra.close();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
