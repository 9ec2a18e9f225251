import { describe, expect, it } from "vitest";
import { loadConfig } from "@feeds/kit";
import { operations, type RouteDef } from "@feeds/contract";
import type { RouteHandler, RouteTable } from "../src/define.js";
import { healthRoutes, type HealthDeps } from "../src/routes/health.js";

// Queue depth is two JetStream info calls: callers share one answer for READY_CACHE_MS, so a
// crowd of unauthenticated callers costs what one does. (test/e2e/cheap-reads.test.ts shows the
// same of readiness over HTTP, counting MongoDB pings and gRPC health calls.)

/** The health routes' handlers, with a NATS whose stream info calls are counted. */
function routes() {
  const specs = new Map<RouteDef, RouteHandler<RouteDef>>();
  const table = { handle: (def: RouteDef, s: RouteHandler<RouteDef>) => specs.set(def, s) } as unknown as RouteTable;
  const infoCalls: string[] = [];
  const nats = {
    stream: (q: string) => `ns_${q}`,
    jsm: {
      streams: {
        info: async (name: string) => {
          infoCalls.push(name);
          await new Promise((r) => setTimeout(r, 20));
          return { state: { messages: name.endsWith("_dlq") ? 0 : 3 } };
        },
      },
    },
  };
  const deps = { config: loadConfig({}), clients: { health: {} }, mongo: {}, redis: { redis: {}, key: (...p: string[]) => p.join(":") }, nats } as unknown as HealthDeps;
  healthRoutes(table, deps);
  const depth = specs.get(operations.queueDepth);
  if (!depth) throw new Error("no queue-depth route");
  const call = (queue: string) => depth.handler({ params: { queue } } as never);
  return { call, infoCalls };
}

describe("queue depth", () => {
  it("100 concurrent callers of one queue cost two JetStream info calls; another queue two more", async () => {
    const { call, infoCalls } = routes();
    const answers = await Promise.all(Array.from({ length: 100 }, () => call("fanout")));
    expect(new Set(answers.map((a) => JSON.stringify(a)))).toEqual(new Set([JSON.stringify({ queue: "fanout", pending: 3, dlq_depth: 0 })]));
    expect(infoCalls.sort()).toEqual(["ns_fanout", "ns_fanout_dlq"]);
    await call("notify");
    expect(infoCalls).toHaveLength(4);
  });

  it("asks JetStream again once the shared answer is READY_CACHE_MS (500 ms) old", async () => {
    const { call, infoCalls } = routes();
    await call("fanout");
    await call("fanout");
    expect(infoCalls).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 550));
    await call("fanout");
    expect(infoCalls).toHaveLength(4);
  });
});
