import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { operations } from "@feeds/contract";
import { createRouteTable, type RouteDeps } from "../src/define.js";

// The gateway serves the route table: each definition once, and every one of them
// (buildGateway calls assertServes, so a route left out stops the boot).

const table = () => createRouteTable(Fastify(), {} as RouteDeps);
const handler = async () => ({ status: "ok", version: "x" });

describe("the gateway's route table", () => {
  it("refuses a definition served twice", () => {
    const r = table();
    r.handle(operations.health, { admission: "exempt", handler });
    expect(() => r.handle(operations.health, { admission: "exempt", handler })).toThrow("GET /v1/health is already served");
  });

  it("names every route of the table that has no handler", () => {
    const r = table();
    r.handle(operations.health, { admission: "exempt", handler });
    expect(() => r.assertServes({ health: operations.health })).not.toThrow();
    expect(() => r.assertServes({ health: operations.health, ready: operations.ready, me: operations.me })).toThrow(
      "the gateway serves no handler for: ready (GET /v1/health/ready), me (GET /v1/me)",
    );
  });

  it("registers the definition's method and path, {x} as :x", async () => {
    const app = Fastify();
    const r = createRouteTable(app, {} as RouteDeps);
    r.handle(operations.queueDepth, { admission: "exempt", handler: async ({ params }) => ({ queue: params.queue, pending: 0, dlq_depth: 0 }) });
    const res = await app.inject({ method: "GET", url: "/v1/health/queues/notify" });
    expect(res.json()).toEqual({ queue: "notify", pending: 0, dlq_depth: 0 });
    expect((await app.inject({ method: "GET", url: "/v1/health/queues/nope" })).statusCode).toBe(400);
  });
});
