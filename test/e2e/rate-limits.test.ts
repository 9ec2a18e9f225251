import { describe, expect, it } from "vitest";
import { envelope, freshRateWindow, http, newIp, newOperator, newTenant, uniqueEmail, PASSWORD } from "../support/api.js";

describe("rate limits", () => {
  it("a tenant over its per-minute limit gets 429 with an integer Retry-After; other tenants are unaffected", async () => {
    const limited = await newTenant({ rate_limit_per_minute: 5 });
    const other = await newTenant({ rate_limit_per_minute: 5 });
    const token = await limited.server();
    await freshRateWindow();
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await http("GET", "/v1/users/x", { token }));
    const statuses = answers.map((a) => a.status);
    const last = answers[answers.length - 1] as (typeof answers)[number];
    // The first requests pass (404: no such user); the window then fills.
    expect(statuses.slice(0, 4)).toEqual([404, 404, 404, 404]);
    expect(statuses.at(-1)).toBe(429);
    const retryAfter = last.headers.get("retry-after");
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(envelope(last).code).toBe("RATE_LIMITED");
    // User tokens of the same tenant share its window.
    expect((await http("GET", "/v1/users/x", { token: await limited.user("u") })).status).toBe(429);
    // Another tenant is unaffected.
    expect((await http("GET", "/v1/users/x", { token: await other.server() })).status).toBe(404);
    // Batch routes have their own window, separate from the normal one.
    const batch = await http("POST", "/v1/batch/users", { token, body: { users: [{ id: "b1", custom: {} }] } });
    expect(batch.status).toBe(200);
  });

  it("login is limited per client address and per email, with Retry-After", async () => {
    // Per email: 10 attempts a minute whatever the address.
    const email = uniqueEmail("victim");
    await freshRateWindow();
    const statuses = [];
    for (let i = 0; i < 11; i++) {
      statuses.push((await http("POST", "/operator/login", { body: { email, password: "wrong" }, ip: newIp() })).status);
    }
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    const limited = await http("POST", "/operator/login", { body: { email, password: "wrong" }, ip: newIp() });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);

    // Per address: 10 attempts a minute whatever the email.
    await freshRateWindow();
    const ip = newIp();
    for (let i = 0; i < 10; i++) {
      expect((await http("POST", "/operator/login", { body: { email: uniqueEmail(), password: "x" }, ip })).status).toBe(401);
    }
    const byIp = await http("POST", "/operator/login", { body: { email: uniqueEmail(), password: "x" }, ip });
    expect(byIp.status).toBe(429);
    expect(envelope(byIp).code).toBe("RATE_LIMITED");
  });

  it("invite acceptance is limited per client address", async () => {
    const t = await newTenant();
    const invited = await newOperator(t.id, "member", { accept: false });
    const ip = newIp();
    await freshRateWindow();
    for (let i = 0; i < 10; i++) {
      expect((await http("POST", "/operator/invite/accept", { body: { token: `nope-${i}`, password: PASSWORD }, ip })).status).toBe(401);
    }
    const res = await http("POST", "/operator/invite/accept", { body: { token: invited.inviteToken, password: PASSWORD }, ip });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
  });
});
