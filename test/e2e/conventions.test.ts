import { describe, expect, inject, it } from "vitest";
import { envelope, http, newTenant } from "../support/api.js";

describe("conventions", () => {
  it("health answers the running build", async () => {
    const res = await http("GET", "/v1/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok", version: inject("buildVersion") });
  });

  it("readiness names every dependency and each service", async () => {
    const res = await http("GET", "/v1/health/ready");
    expect(res.status).toBe(200);
    const names = res.body.checks.map((c: { name: string }) => c.name);
    for (const n of ["mongodb", "nats", "redis", "tenancy", "identity", "feed", "graph", "engagement", "notification", "catalog"]) {
      expect(names).toContain(n);
    }
    expect(res.body.checks.every((c: { ok: boolean }) => c.ok)).toBe(true);
  });

  it("queue-depth routes read the real JetStream streams", async () => {
    for (const queue of ["fanout", "notify"]) {
      const res = await http("GET", `/v1/health/queues/${queue}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ queue, pending: 0, dlq_depth: 0 });
    }
  });

  it("every answer carries a fresh request id, errors too", async () => {
    const a = await http("GET", "/v1/health");
    const b = await http("GET", "/v1/health");
    expect(a.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"));
    const err = await http("GET", "/v1/users/x");
    expect(envelope(err).requestId).toBe(err.headers.get("x-request-id"));
  });

  it("unknown routes answer the 404 envelope", async () => {
    const res = await http("GET", "/v1/no/such/route");
    expect(res.status).toBe(404);
    expect(envelope(res).code).toBe("NOT_FOUND");
    expect(envelope(res).fields).toBeUndefined();
  });

  it("malformed JSON and oversized bodies are VALIDATION_FAILED with fields", async () => {
    const t = await newTenant();
    const token = await t.server();
    const bad = await http("PUT", "/v1/users/u1", { token, rawBody: "{not json" });
    expect(bad.status).toBe(400);
    expect(envelope(bad).code).toBe("VALIDATION_FAILED");
    expect(Array.isArray(envelope(bad).fields)).toBe(true);

    const big = await http("PUT", "/v1/users/u1", { token, body: { custom: { blob: "x".repeat(1024 * 1024 + 10) } } });
    expect(big.status).toBe(400);
    expect(envelope(big).code).toBe("VALIDATION_FAILED");
  });

  it("page rules: limit out of range and malformed cursors are VALIDATION_FAILED naming the field", async () => {
    const staff = await import("../support/api.js").then((m) => m.staffToken());
    for (const q of ["limit=0", "limit=101", "limit=abc"]) {
      const res = await http("GET", `/admin/tenants?${q}`, { token: staff });
      expect(res.status).toBe(400);
      expect(envelope(res).fields?.[0]?.path).toBe("limit");
    }
    const res = await http("GET", "/admin/tenants?next=%%%garbage", { token: staff });
    expect(res.status).toBe(400);
    expect(envelope(res).fields?.[0]?.path).toBe("next");
    // `next` wins over its deprecated alias `cursor` (two tenants at least: a page 1 with a next).
    const { newTenant } = await import("../support/api.js");
    await Promise.all([newTenant(), newTenant()]);
    const page1 = await http("GET", "/admin/tenants?limit=1", { token: staff });
    expect(page1.status).toBe(200);
    expect(page1.body.next).toEqual(expect.any(String));
    const both = await http("GET", `/admin/tenants?limit=1&next=${page1.body.next}&cursor=garbage!`, { token: staff });
    expect(both.status).toBe(200);
    const alias = await http("GET", `/admin/tenants?limit=1&cursor=${page1.body.next}`, { token: staff });
    expect(alias.body).toEqual(both.body);
  });

  it("serves the OpenAPI document of every route", async () => {
    const res = await http("GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining(["/v1/users/{id}", "/operator/login", "/admin/tenants", "/v1/health/ready"]),
    );
    expect(res.body.paths["/operator/login"].post.requestBody).toBeDefined();
  });
});
