import { HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import { createWorkerBeats, queueDepth, serviceNames, workerNames, type Config, type Mongo, type Nats, type RedisConn } from "@feeds/kit";
import { healthSchema, queueDepthSchema, queueParams, readinessSchema } from "@feeds/sdk";
import type { RouteTable } from "../define.js";
import type { Clients } from "@feeds/kit";

export interface HealthDeps {
  config: Config;
  clients: Pick<Clients, "health">;
  mongo: Mongo;
  redis: RedisConn;
  nats: Nats;
}

/** Rejects after `ms`: each readiness check has its own short timeout. */
async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(r: RouteTable, deps: HealthDeps) {
  const { config, clients } = deps;
  const tags = ["health"];
  const ms = config.READY_CHECK_TIMEOUT_MS;
  const beats = createWorkerBeats(deps.redis);

  const checks: { name: string; run: () => Promise<unknown> }[] = [
    { name: "mongodb", run: () => deps.mongo.db.command({ ping: 1 }) },
    { name: "nats", run: () => deps.nats.nc.flush() },
    { name: "redis", run: () => deps.redis.redis.ping() },
    ...serviceNames.map((n) => ({
      name: n,
      run: async () => {
        const res = await clients.health[n].check({ service: "" }, { timeoutMs: ms });
        if (res.status !== HealthCheckResponse_ServingStatus.SERVING) throw new Error("not serving");
      },
    })),
  ];
  // A worker whose every consumer loop stopped beating (crashed, stopped). Asked only while NATS
  // (what they consume) and Redis (where they beat) answer: otherwise that dependency is the news.
  const workerChecks = workerNames.map((w) => ({
    name: `worker:${w}`,
    run: async () => {
      if (!(await beats.alive(w))) throw new Error("no live consumer");
    },
  }));
  const runAll = (list: typeof checks) =>
    Promise.all(list.map(async (c) => ({ name: c.name, ok: await within(ms, c.run()).then(() => true, () => false) })));

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
      const results = await runAll(checks);
      if (results.every((c) => c.ok || (c.name !== "nats" && c.name !== "redis"))) results.push(...(await runAll(workerChecks)));
      const ok = results.every((c) => c.ok);
      reply.code(ok ? 200 : 503);
      return { status: ok ? "ok" : "unavailable", checks: results };
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
