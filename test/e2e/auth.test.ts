import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { envelope, http, newOperator, newTenant, staffToken } from "../support/api.js";

const secretBytes = (s: string) => new TextEncoder().encode(s);
const now = () => Math.floor(Date.now() / 1000);

async function sign(claims: Record<string, unknown>, header: Record<string, unknown>, secret: string) {
  return new SignJWT(claims).setProtectedHeader({ alg: "HS256", ...header }).sign(secretBytes(secret));
}

describe("server and user tokens", () => {
  it("answers 401 for every kind of bad token", async () => {
    const t = await newTenant();
    const other = await newTenant();
    const kid = { kid: t.apiKey };
    const unsigned = (payload: object) =>
      `${Buffer.from(JSON.stringify({ alg: "none", kid: t.apiKey })).toString("base64url")}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.`;
    const bad: Record<string, string | undefined> = {
      "no header": undefined,
      "not a JWT": "hello",
      "operator-looking opaque token": "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
      "unknown kid": await sign({ server: true, iat: now() }, { kid: "ak_nope" }, t.apiSecret),
      "no kid": await sign({ server: true, iat: now() }, {}, t.apiSecret),
      "wrong secret": await sign({ server: true, iat: now() }, kid, other.apiSecret),
      "other tenant's kid": await sign({ server: true, iat: now() }, { kid: other.apiKey }, t.apiSecret),
      "alg none": unsigned({ server: true, iat: now() }),
      "alg HS512": await new SignJWT({ server: true, iat: now() }).setProtectedHeader({ alg: "HS512", kid: t.apiKey }).sign(secretBytes(t.apiSecret)),
      "expired server token": await sign({ server: true, iat: now() - 100, exp: now() - 60 }, kid, t.apiSecret),
      "expired user token": await sign({ user_id: "u1", iat: now() - 100, exp: now() - 60 }, kid, t.apiSecret),
      "user token without exp": await sign({ user_id: "u1", iat: now() }, kid, t.apiSecret),
      "neither server nor user": await sign({ iat: now(), exp: now() + 60 }, kid, t.apiSecret),
      "tampered payload": (await sign({ user_id: "u1", iat: now(), exp: now() + 60 }, kid, t.apiSecret)).replace(/\.[^.]+\./, `.${Buffer.from(JSON.stringify({ user_id: "admin", iat: now(), exp: now() + 60 })).toString("base64url")}.`),
    };
    for (const [label, token] of Object.entries(bad)) {
      const res = await http("GET", "/v1/users/u1", token ? { token } : {});
      expect(res.status, label).toBe(401);
      expect(envelope(res).code, label).toBe("UNAUTHENTICATED");
    }
    // An operator session is not a tenant credential, and a tenant token is not an operator session.
    const owner = await newOperator(t.id, "owner");
    expect((await http("GET", "/v1/users/u1", { token: owner.token })).status).toBe(401);
    expect((await http("GET", "/operator/me", { token: await t.server() })).status).toBe(401);
    // Accepted: a fresh server token, with and without exp, within the 5 s clock tolerance.
    expect((await http("GET", "/v1/users/u1", { token: await t.server() })).status).toBe(404);
    const skewed = await sign({ server: true, iat: now(), exp: now() - 2 }, kid, t.apiSecret);
    expect((await http("GET", "/v1/users/u1", { token: skewed })).status).toBe(404);
  });

  it("rotation kills the old secret at once, through admin and through the owner console", async () => {
    const t = await newTenant();
    const oldToken = await t.server();
    expect((await http("GET", "/v1/users/x", { token: oldToken })).status).toBe(404);
    const rotated = await http("POST", `/admin/tenants/${t.id}/rotate-secret`, { token: await staffToken() });
    expect(rotated.status).toBe(200);
    expect(rotated.body.api_secret).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect((await http("GET", "/v1/users/x", { token: oldToken })).status).toBe(401);
    t.apiSecret = rotated.body.api_secret;
    const newToken = await t.server();
    expect((await http("GET", "/v1/users/x", { token: newToken })).status).toBe(404);

    const owner = await newOperator(t.id, "owner");
    const again = await http("POST", "/operator/tenant/rotate-secret", { token: owner.token });
    expect(again.status).toBe(200);
    expect((await http("GET", "/v1/users/x", { token: newToken })).status).toBe(401);
    t.apiSecret = again.body.api_secret;
    expect((await http("GET", "/v1/users/x", { token: await t.server() })).status).toBe(404);
    // The secret is never readable again.
    const read = await http("GET", `/admin/tenants/${t.id}`, { token: await staffToken() });
    expect(JSON.stringify(read.body)).not.toContain(t.apiSecret);
    expect(read.body.api_secret).toBeUndefined();
  });

  it("revocation refuses tokens issued before it and accepts later ones", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("PUT", "/v1/users/alice", { token: server, body: { custom: {} } })).status).toBe(201);
    const early = await t.user("alice");
    const bobEarly = await t.user("bob");
    expect((await http("GET", "/v1/me", { token: early })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    const revoked = await http("POST", "/v1/users/alice/revoke-tokens", { token: server });
    expect(revoked.status).toBe(200);
    expect(Date.parse(revoked.body.revoked_before)).toBeGreaterThan(Date.now() - 5000);
    expect((await http("GET", "/v1/me", { token: early })).status).toBe(401);
    // Other users are untouched.
    expect((await http("GET", "/v1/users/alice", { token: bobEarly })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    const later = await t.user("alice");
    expect((await http("GET", "/v1/me", { token: later })).status).toBe(200);
    // Revoking a user with no record works too (auth-hardening.test.ts has the whole story).
    expect((await http("POST", "/v1/users/ghost/revoke-tokens", { token: server })).status).toBe(200);
  });

  it("a suspended tenant gets 403 on every token until reactivated", async () => {
    const t = await newTenant();
    const server = await t.server();
    const user = await t.user("u1");
    const staff = await staffToken();
    expect((await http("GET", "/v1/users/u1", { token: server })).status).toBe(404);
    const s = await http("POST", `/admin/tenants/${t.id}/suspend`, { token: staff });
    expect(s.status).toBe(200);
    expect(s.body.status).toBe("suspended");
    for (const token of [server, user]) {
      const res = await http("GET", "/v1/users/u1", { token });
      expect(res.status).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
    }
    const r = await http("POST", `/admin/tenants/${t.id}/reactivate`, { token: staff });
    expect(r.body.status).toBe("active");
    expect((await http("GET", "/v1/users/u1", { token: server })).status).toBe(404);
  });

  it("user tokens get 403 on server-only routes", async () => {
    const t = await newTenant();
    const user = await t.user("u1");
    const routes: [string, string, unknown][] = [
      ["PUT", "/v1/users/u1", { custom: {} }],
      ["POST", "/v1/users/u1/revoke-tokens", undefined],
      ["POST", "/v1/batch/users", { users: [{ id: "a", custom: {} }] }],
    ];
    for (const [method, path, body] of routes) {
      const res = await http(method, path, { token: user, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
    }
    // The calling user route is user-token only.
    expect((await http("GET", "/v1/me", { token: await t.server() })).status).toBe(403);
  });

  it("two tenants never see each other's users", async () => {
    const a = await newTenant();
    const b = await newTenant();
    expect((await http("PUT", "/v1/users/same-id", { token: await a.server(), body: { custom: { owner: "a" } } })).status).toBe(201);
    expect((await http("GET", "/v1/users/same-id", { token: await b.server() })).status).toBe(404);
    expect((await http("PUT", "/v1/users/same-id", { token: await b.server(), body: { custom: { owner: "b" } } })).status).toBe(201);
    expect((await http("GET", "/v1/users/same-id", { token: await a.server() })).body.custom).toEqual({ owner: "a" });
    expect((await http("GET", "/v1/users/same-id", { token: await b.user("x") })).body.custom).toEqual({ owner: "b" });
    const ownerB = await newOperator(b.id, "owner");
    const list = await http("GET", "/operator/inspect/users", { token: ownerB.token });
    expect(list.body.results.map((u: { id: string }) => u.id)).toEqual(["same-id"]);
  });
});
