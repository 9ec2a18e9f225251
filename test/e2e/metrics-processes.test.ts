import { describe, expect, inject, it } from "vitest";
import { http } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";

// Every process of the running system (one: the gateway; split: the gateway, seven services and
// the fan-out, follow and notify workers) serves Prometheus `GET /metrics` on a port of its own,
// and the API port does not.

describe("metrics endpoints", () => {
  it("every process serves /metrics on its own port with its RPCs and Node's process metrics; the API port does not", async () => {
    const urls = inject("metricsUrls");
    const split = Object.keys(urls).length > 1;
    expect(Object.keys(urls).sort()).toEqual(
      split
        ? ["catalog", "engagement", "fanout-worker", "feed", "follow-worker", "gateway", "graph", "identity", "notification", "notify-worker", "tenancy"]
        : ["gateway"],
    );
    // Readiness asks each service's gRPC health: every service process serves (and times) a call.
    expect((await http("GET", "/v1/health/ready")).status).toBe(200);
    const apiPort = new URL(inject("baseUrl")).port;
    for (const [name, url] of Object.entries(urls)) {
      expect(new URL(url).port, name).not.toBe(apiPort);
      const res = await fetch(url);
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type"), name).toMatch(/^text\/plain/);
      const m = await scrape(url);
      expect(m.has("process_cpu_seconds_total"), name).toBe(true);
      // Workers serve health to probes only (none here); the split gateway calls, it is not called.
      if (!name.endsWith("-worker") && (name !== "gateway" || !split)) {
        expect(total(m, "feeds_rpc_duration_seconds_count", { service: "grpc.health.v1.Health", method: "Check", code: "OK" }), name).toBeGreaterThan(0);
      }
    }
    expect(total(await scrape(urls.gateway), "feeds_http_request_duration_seconds_count", { route: "/v1/health/ready" })).toBeGreaterThan(0);
    expect((await http("GET", "/metrics")).status).toBe(404);
  });
});
