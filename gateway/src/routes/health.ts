import { cachedRead, queueDepth, within, type Clients, type Config, type QueueDepth, type QueueName, type Mongo, type Nats, type RedisConn } from "@feeds/kit";
import { operations } from "@feeds/contract";
import type { RouteTable } from "../define.js";
import { createReadiness } from "../readiness.js";

export interface HealthDeps {
  config: Config;
  clients: Pick<Clients, "health">;
  mongo: Mongo;
  redis: RedisConn;
  nats: Nats;
}

export function healthRoutes(r: RouteTable, deps: HealthDeps) {
  const { config } = deps;
  const ms = config.READY_CHECK_TIMEOUT_MS;
  const readiness = createReadiness(deps);
  // Two JetStream info calls per queue, shared by every caller for READY_CACHE_MS.
  const depths = new Map<QueueName, () => Promise<QueueDepth>>();
  const depthOf = (queue: QueueName) => {
    let read = depths.get(queue);
    if (!read) depths.set(queue, (read = cachedRead(() => within(ms, queueDepth(deps.nats, queue)), config.READY_CACHE_MS)));
    return read();
  };

  r.handle(operations.health, {
    admission: "exempt",
    async handler() {
      return { status: "ok", version: config.BUILD_VERSION };
    },
  });

  r.handle(operations.ready, {
    admission: "exempt",
    async handler({ reply }) {
      const { ok, checks } = await readiness.check();
      reply.code(ok ? 200 : 503);
      return { status: ok ? "ok" : "unavailable", checks };
    },
  });

  r.handle(operations.queueDepth, {
    admission: "exempt",
    async handler({ params }) {
      return depthOf(params.queue);
    },
  });
}
