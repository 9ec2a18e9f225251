import { queueDepth, type Clients, type Config, type Mongo, type Nats, type RedisConn } from "@feeds/kit";
import { healthSchema, queueDepthSchema, queueParams, readinessSchema } from "@feeds/sdk";
import type { RouteTable } from "../define.js";
import { createReadiness, within } from "../readiness.js";

export interface HealthDeps {
  config: Config;
  clients: Pick<Clients, "health">;
  mongo: Mongo;
  redis: RedisConn;
  nats: Nats;
}

export function healthRoutes(r: RouteTable, deps: HealthDeps) {
  const { config } = deps;
  const tags = ["health"];
  const ms = config.READY_CHECK_TIMEOUT_MS;
  const readiness = createReadiness(deps);

  r.add({
    method: "GET",
    url: "/v1/health",
    auth: "none",
    summary: "Liveness and the running build",
    tags,
    response: { 200: healthSchema },
    async handler() {
      return { status: "ok", version: config.BUILD_VERSION };
    },
  });

  r.add({
    method: "GET",
    url: "/v1/health/ready",
    auth: "none",
    summary: "Readiness of every dependency (503 naming the failing one)",
    tags,
    response: { 200: readinessSchema, 503: readinessSchema },
    async handler({ reply }) {
      const { ok, checks } = await readiness.check();
      reply.code(ok ? 200 : 503);
      return { status: ok ? "ok" : "unavailable", checks };
    },
  });

  r.add({
    method: "GET",
    url: "/v1/health/queues/:queue",
    auth: "none",
    summary: "Work-queue and dead-letter depth (fanout, notify or webhooks)",
    tags,
    params: queueParams,
    response: { 200: queueDepthSchema },
    async handler({ params }) {
      return within(ms, queueDepth(deps.nats, params.queue));
    },
  });
}
