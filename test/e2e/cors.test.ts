import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { baseUrl, envelope, http, newOperator, newTenant, staffToken, type TestTenant } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";
import { until } from "../support/until.js";

// CORS per tenant (docs/cors.md) through the real gateway: the origins routes, preflights answered
// from the union of allowed origins, actual answers by the caller's own tenant, and every decision
// made from memory.

/** A change of origins reaches every gateway's preflight set within this (poll 1 s + a call). */
const PROPAGATION_MS = 3000;

const allowHeaders = "Authorization, Content-Type, If-None-Match, Idempotency-Key, Last-Event-ID, X-Request-Id";
const exposeHeaders = "ETag, Retry-After, X-Request-Id, Idempotent-Replayed, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset";

const newOrigin = (label: string) => `https://${label}-${randomBytes(4).toString("hex")}.example`;

/** One request with an Origin header, as a browser sends it (fetch: nothing filtered). */
async function fromOrigin(method: string, path: string, origin: string, opts: { token?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { origin, ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const res = await fetch(`${baseUrl()}${path}`, { method, headers });
  await res.arrayBuffer();
  return res;
}

const preflight = (path: string, origin: string, method = "POST") =>
  fromOrigin("OPTIONS", path, origin, { headers: { "access-control-request-method": method, "access-control-request-headers": "authorization, content-type" } });

/** The CORS headers of an answer (access-control-*), by name. */
const corsHeaders = (res: Response) => Object.fromEntries([...res.headers].filter(([k]) => k.startsWith("access-control-")));

const varies = (res: Response) => (res.headers.get("vary") ?? "").split(",").map((s) => s.trim().toLowerCase());

async function withOrigins(origins: string[]): Promise<{ t: TestTenant; owner: { token: string } }> {
  const t = await newTenant();
  const owner = await newOperator(t.id, "owner");
  const set = await http("PUT", "/operator/tenant/origins", { token: owner.token, body: { origins } });
  expect(set.status).toBe(200);
  return { t, owner };
}

/** Waits until a preflight from `origin` is (or is no longer) allowed. */
const preflightAllows = (origin: string, allowed: boolean) =>
  until(
    `a preflight from ${origin} ${allowed ? "allowed" : "refused"}`,
    async () => ((await preflight("/v1/feeds/user/a", origin)).headers.has("access-control-allow-origin") === allowed ? true : undefined),
    PROPAGATION_MS,
    100,
  );

describe("setting a tenant's origins", () => {
  it("its owner and staff set them (deduplicated, in order); members may not; the Tenant shows them", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    const [a, b] = [newOrigin("a"), "http://localhost:5173"];
    const set = await http("PUT", "/operator/tenant/origins", { token: owner.token, body: { origins: [a, b, a] } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ id: t.id, name: expect.any(String), api_key: t.apiKey, status: "active", created_at: expect.any(String), allowed_origins: [a, b] });
    expect((await http("GET", "/operator/tenant", { token: member.token })).body.allowed_origins).toEqual([a, b]);

    const bad = await http("PUT", "/operator/tenant/origins", { token: member.token, body: { origins: [a] } });
    expect(bad.status).toBe(403);
    expect(envelope(bad).code).toBe("FORBIDDEN");
    expect((await http("PUT", "/operator/tenant/origins", { token: await t.server(), body: { origins: [a] } })).status).toBe(401);
    expect((await http("PUT", "/operator/tenant/origins", { body: { origins: [a] } })).status).toBe(401);

    const staff = await http("PUT", `/admin/tenants/${t.id}/origins`, { token: await staffToken(), body: { origins: ["https://[::1]:8443"] } });
    expect(staff.status).toBe(200);
    expect(staff.body).toMatchObject({ id: t.id, rate_limit_per_minute: null, allowed_origins: ["https://[::1]:8443"] });
    expect((await http("GET", `/admin/tenants/${t.id}`, { token: await staffToken() })).body.allowed_origins).toEqual(["https://[::1]:8443"]);
    expect((await http("PUT", `/admin/tenants/${t.id}/origins`, { token: owner.token, body: { origins: [] } })).status).toBe(403);
    expect((await http("PUT", "/admin/tenants/t_nosuchtenant/origins", { token: await staffToken(), body: { origins: [] } })).status).toBe(404);
    // [] allows none.
    expect((await http("PUT", "/operator/tenant/origins", { token: owner.token, body: { origins: [] } })).body.allowed_origins).toEqual([]);
  });

  it("refuses more than 20, and anything but an exact origin as a browser sends it, with fields", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const put = (origins: unknown) => http("PUT", "/operator/tenant/origins", { token: owner.token, body: { origins } });
    const many = await put(Array.from({ length: 21 }, (_, i) => `https://app${i}.example`));
    expect(many.status).toBe(400);
    expect(envelope(many).fields?.map((f) => f.path)).toEqual(["origins"]);
    expect((await put(Array.from({ length: 20 }, (_, i) => `https://app${i}.example`))).status).toBe(200);

    const refused = [
      "javascript:alert(1)",
      "null",
      "https://app.example/path",
      "https://app.example/",
      "https://app.example?x=1",
      "https://app.example#top",
      "https://App.example",
      "https://app.example:443",
      "http://app.example:80",
      "https://*.example",
      "*",
      "https://user:pw@app.example",
      "ftp://app.example",
      "file:///etc/passwd",
      "data:text/html,hi",
      " https://app.example",
      "https://bücher.example",
      "app.example",
      "",
      `https://${"a".repeat(300)}.example`,
    ];
    for (const origin of refused) {
      const res = await put(["https://fine.example", origin]);
      expect(res.status, origin).toBe(400);
      const e = envelope(res);
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.fields?.map((f) => f.path), origin).toEqual(["origins.1"]);
    }
    expect(envelope(await put(["https://App.example:443/"])).fields?.[0]?.message).toContain("https://app.example");
    expect((await put("https://app.example")).status).toBe(400);
    expect((await put([42])).status).toBe(400);
    // Nothing of the refused lists was stored.
    expect((await http("GET", "/operator/tenant", { token: owner.token })).body.allowed_origins).toHaveLength(20);
  });
});

describe("preflights: decided from the origins some tenant allows", () => {
  it("an allowed origin gets exactly the headers a browser needs; another none", async () => {
    const origin = newOrigin("pre");
    await withOrigins([origin]);
    await preflightAllows(origin, true);
    const res = await preflight("/v1/feeds/user/a/activities", origin);
    expect(res.status).toBe(204);
    expect(corsHeaders(res)).toEqual({
      "access-control-allow-origin": origin,
      "access-control-allow-methods": "GET, POST, PUT, PATCH, DELETE",
      "access-control-allow-headers": allowHeaders,
      "access-control-max-age": "600",
    });
    expect(varies(res)).toContain("origin");

    const other = await preflight("/v1/feeds/user/a/activities", newOrigin("other"));
    expect(other.status).toBe(204);
    expect(corsHeaders(other)).toEqual({});
    // Not a preflight (no Access-Control-Request-Method): no CORS headers either.
    expect(corsHeaders(await fromOrigin("OPTIONS", "/v1/feeds/user/a", origin))).toEqual({});
    // The console's routes are same-origin only.
    expect(corsHeaders(await preflight("/operator/tenant", origin, "GET"))).toEqual({});
    expect(corsHeaders(await preflight("/admin/tenants", origin, "GET"))).toEqual({});
  });
});

describe("actual answers: decided by the caller's own tenant", () => {
  it("tenant A's token from A's origin gets the headers; from B's origin (allowed by B only) none", async () => {
    const [originA, originB] = [newOrigin("a"), newOrigin("b")];
    const { t: a } = await withOrigins([originA]);
    await withOrigins([originB]);
    await preflightAllows(originB, true);
    const token = await a.user("alice");

    const own = await fromOrigin("GET", "/v1/feeds/user/alice", originA, { token });
    expect(own.status).toBe(200);
    expect(corsHeaders(own)).toEqual({ "access-control-allow-origin": originA, "access-control-expose-headers": exposeHeaders });
    expect(varies(own)).toContain("origin");
    // An error after authentication is still the tenant's answer.
    const denied = await fromOrigin("POST", "/v1/users/alice/revoke-tokens", originA, { token });
    expect(denied.status).toBe(403);
    expect(denied.headers.get("access-control-allow-origin")).toBe(originA);

    const foreign = await fromOrigin("GET", "/v1/feeds/user/alice", originB, { token });
    expect(foreign.status).toBe(200);
    expect(corsHeaders(foreign)).toEqual({});
    expect(varies(foreign)).toContain("origin");
    expect(corsHeaders(await fromOrigin("GET", "/v1/feeds/user/alice", newOrigin("none"), { token }))).toEqual({});
  });

  it("answers no tenant could be established follow the union: a 401 is readable, to refresh a token", async () => {
    const origin = newOrigin("u");
    await withOrigins([origin]);
    await preflightAllows(origin, true);
    const unauthenticated = await fromOrigin("GET", "/v1/feeds/user/alice", origin, { token: "not.a.token" });
    expect(unauthenticated.status).toBe(401);
    expect(corsHeaders(unauthenticated)).toEqual({ "access-control-allow-origin": origin, "access-control-expose-headers": exposeHeaders });
    expect(corsHeaders(await fromOrigin("GET", "/v1/feeds/user/alice", newOrigin("none"), { token: "not.a.token" }))).toEqual({});
    expect((await fromOrigin("GET", "/v1/health", origin)).headers.get("access-control-allow-origin")).toBe(origin);
    // Operator routes: same-origin only, whatever the origin.
    const op = await fromOrigin("GET", "/operator/me", origin);
    expect(op.status).toBe(401);
    expect(corsHeaders(op)).toEqual({});
    expect(varies(op)).not.toContain("origin");
  });
});

describe("from memory, and changes within the bound", () => {
  it("no tenancy or database call per CORS decision", async () => {
    const origin = newOrigin("m");
    const { t } = await withOrigins([origin]);
    await preflightAllows(origin, true);
    const token = await t.server();
    // Warm the credential cache.
    expect((await fromOrigin("GET", "/v1/users/x", origin, { token })).status).toBe(404);
    const before = await scrape();
    for (let i = 0; i < 50; i++) {
      expect((await preflight("/v1/users/x", origin, "GET")).headers.get("access-control-allow-origin")).toBe(origin);
      expect((await preflight("/v1/users/x", newOrigin("n"), "GET")).headers.has("access-control-allow-origin")).toBe(false);
    }
    for (let i = 0; i < 50; i++) {
      expect((await fromOrigin("GET", "/v1/users/x", origin, { token })).headers.get("access-control-allow-origin")).toBe(origin);
    }
    const after = await scrape();
    const calls = (labels: Record<string, string>) =>
      total(after, "feeds_rpc_duration_seconds_count", labels) - total(before, "feeds_rpc_duration_seconds_count", labels);
    // 150 decisions: the union is reloaded only when its stamp moves (or once a minute), and
    // tenancy (the tenants' MongoDB) is asked nothing else.
    expect(calls({ method: "ListAllowedOrigins" })).toBeLessThanOrEqual(1);
    expect(calls({ service: "feeds.tenancy.v1.TenancyService" })).toBeLessThanOrEqual(1);
  });

  it("a removed origin: the next actual answer has no headers; preflights stop within the bound", async () => {
    const origin = newOrigin("r");
    const { t, owner } = await withOrigins([origin]);
    await preflightAllows(origin, true);
    const token = await t.server();
    expect((await fromOrigin("GET", "/v1/users/x", origin, { token })).headers.get("access-control-allow-origin")).toBe(origin);

    expect((await http("PUT", "/operator/tenant/origins", { token: owner.token, body: { origins: [] } })).status).toBe(200);
    const started = Date.now();
    // The tenant's stamp moved: its very next request reads the tenant again.
    expect(corsHeaders(await fromOrigin("GET", "/v1/users/x", origin, { token }))).toEqual({});
    await preflightAllows(origin, false);
    expect(Date.now() - started).toBeLessThan(PROPAGATION_MS);
  });
});
