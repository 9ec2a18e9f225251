import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { createUserToken } from "@feeds/node";
import { envelope, freshRateWindow, http, newIp, newTenant, uniqueEmail, type TestTenant } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";

// Credentials that should cost the service nothing: a token "issued" in the future, random
// well-formed kids and session tokens from one address (a budget of 60 failures a minute per
// address, docs/limits.md), login attempts spread over one IPv6 /64.

const now = () => Math.floor(Date.now() / 1000);
const sign = (t: TestTenant, claims: Record<string, unknown>, kid = t.apiKey) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256", kid }).sign(new TextEncoder().encode(t.apiSecret));
const calls = async (method: string) =>
  total(await scrape(), "feeds_rpc_duration_seconds_count", { method });

describe("credentials issued in the future", () => {
  it("a user token whose iat is past the 5 s clock tolerance is refused, so it cannot outlive a revocation", async () => {
    const t = await newTenant();
    const server = await t.server();
    const ahead = await createUserToken(t.apiKey, t.apiSecret, "mallory", { issuedAt: now() + 3600, expiresIn: "2h" });
    const res = await http("GET", "/v1/users/mallory", { token: ahead });
    expect(res.status).toBe(401);
    expect(envelope(res).code).toBe("UNAUTHENTICATED");
    expect((await http("POST", "/v1/users/mallory/revoke-tokens", { token: server })).status).toBe(200);
    expect((await http("GET", "/v1/users/mallory", { token: ahead })).status).toBe(401);
    // Within the tolerance a token is taken: clocks differ a little.
    const near = await createUserToken(t.apiKey, t.apiSecret, "alice", { issuedAt: now() + 3 });
    expect((await http("GET", "/v1/users/alice", { token: near })).status).toBe(404);
    // A server token too.
    expect((await http("GET", "/v1/users/x", { token: await sign(t, { server: true, iat: now() + 3600 }) })).status).toBe(401);
  });
});

describe("failed authentications per address", () => {
  it("random well-formed kids from one address: 60 reach tenancy, then 429 with Retry-After and no lookup", async () => {
    const t = await newTenant();
    const ip = newIp();
    // The tenant's credential is in the gateway's memory once used (from another address).
    expect((await http("GET", "/v1/users/x", { token: await t.server() })).status).toBe(404);
    await freshRateWindow();
    const before = await calls("GetCredential");
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) {
      const token = await sign(t, { server: true, iat: now() }, `ak_${randomBytes(12).toString("hex")}`);
      statuses.push((await http("GET", "/v1/users/x", { token, ip })).status);
    }
    expect(statuses).toEqual([...Array(60).fill(401), ...Array(10).fill(429)]);
    expect((await calls("GetCredential")) - before).toBe(60);
    const refused = await http("GET", "/v1/users/x", { token: await sign(t, { server: true, iat: now() }, `ak_${randomBytes(12).toString("hex")}`), ip });
    expect(envelope(refused).code).toBe("RATE_LIMITED");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // A credential answered from memory is not held back, nor is another address.
    expect((await http("GET", "/v1/users/x", { token: await t.server(), ip })).status).toBe(404);
    expect((await http("GET", "/v1/users/x", { token: await sign(t, { server: true, iat: now() }, `ak_${randomBytes(12).toString("hex")}`), ip: newIp() })).status).toBe(401);
  });

  it("random session tokens from one address: 60 reach identity, then 429 with no lookup", async () => {
    const ip = newIp();
    await freshRateWindow();
    const before = await calls("Authenticate");
    const statuses: number[] = [];
    for (let i = 0; i < 65; i++) statuses.push((await http("GET", "/operator/me", { token: randomBytes(32).toString("base64url"), ip })).status);
    expect(statuses).toEqual([...Array(60).fill(401), ...Array(5).fill(429)]);
    expect((await calls("Authenticate")) - before).toBe(60);
  });
});

describe("IPv6 clients", () => {
  it("login attempts count per /64: ten addresses of one /64 spend one budget", async () => {
    await freshRateWindow();
    const prefix = `2001:db8:${randomBytes(2).toString("hex")}:${randomBytes(2).toString("hex")}`;
    const attempt = (i: number, p = prefix) => http("POST", "/operator/login", { body: { email: uniqueEmail(), password: "wrong" }, ip: `${p}::${i.toString(16)}` });
    for (let i = 1; i <= 10; i++) expect((await attempt(i)).status).toBe(401);
    const limited = await attempt(11);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("ratelimit-remaining")).toBe("0");
    // Another /64 is another client.
    expect((await attempt(1, `2001:db8:${randomBytes(2).toString("hex")}:1`)).status).toBe(401);
  });
});
