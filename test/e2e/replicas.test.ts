import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newTenant, staffToken } from "../support/api.js";
import { startReplica } from "../support/replica.js";

// A second gateway replica on the same namespace: rotation, suspension and revocation made
// through one replica take effect on the other's very next request, caches warm on both.

describe("changes reach every gateway replica on the next request", () => {
  let second: RunningSystem;
  const url = () => second.url;

  beforeAll(async () => {
    second = await startReplica();
  });
  afterAll(async () => {
    await second?.stop();
  });

  it("rotation", async () => {
    const t = await newTenant();
    const old = await t.server();
    // Warm the credential and verified-token caches of both replicas.
    expect((await http("GET", "/v1/users/x", { token: old })).status).toBe(404);
    expect((await http("GET", "/v1/users/x", { token: old, url: url() })).status).toBe(404);
    const rotated = await http("POST", `/admin/tenants/${t.id}/rotate-secret`, { token: await staffToken() });
    expect(rotated.status).toBe(200);
    expect((await http("GET", "/v1/users/x", { token: old, url: url() })).status).toBe(401);
    t.apiSecret = rotated.body.api_secret;
    expect((await http("GET", "/v1/users/x", { token: await t.server(), url: url() })).status).toBe(404);
  });

  it("suspension and reactivation", async () => {
    const t = await newTenant();
    const token = await t.server();
    expect((await http("GET", "/v1/users/x", { token, url: url() })).status).toBe(404);
    await http("POST", `/admin/tenants/${t.id}/suspend`, { token: await staffToken() });
    expect((await http("GET", "/v1/users/x", { token, url: url() })).status).toBe(403);
    await http("POST", `/admin/tenants/${t.id}/reactivate`, { token: await staffToken() });
    expect((await http("GET", "/v1/users/x", { token, url: url() })).status).toBe(404);
  });

  it("revocation", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/users/amy", { token: server, body: { custom: {} } });
    const early = await t.user("amy");
    expect((await http("GET", "/v1/me", { token: early, url: url() })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await http("POST", "/v1/users/amy/revoke-tokens", { token: server })).status).toBe(200);
    expect((await http("GET", "/v1/me", { token: early, url: url() })).status).toBe(401);
  });
});
