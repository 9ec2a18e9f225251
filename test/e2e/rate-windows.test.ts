import { describe, expect, it } from "vitest";
import { createUserToken } from "@feeds/node";
import { envelope, freshRateWindow, http, newIp, newTenant, type RawAnswer } from "../support/api.js";

// The rate windows a tenant's callers share (docs/limits.md): each end user has a window of its
// own (10% of the tenant's), user tokens together fill at most 80% of the tenant's so that server
// tokens keep the rest, only requests whose credential is valid and current count, costly routes
// count more, and every answer says where the caller stands (RateLimit-Limit, -Remaining, -Reset).

const rate = (a: RawAnswer) => ({
  limit: Number(a.headers.get("ratelimit-limit")),
  remaining: Number(a.headers.get("ratelimit-remaining")),
  reset: Number(a.headers.get("ratelimit-reset")),
});
const get = (token: string, ip?: string) => http("GET", "/v1/users/nobody", { token, ...(ip ? { ip } : {}) });

describe("rate windows", () => {
  it("an end user spends only its own window (10% of the tenant's); other users and the server are served", async () => {
    const t = await newTenant({ rate_limit_per_minute: 100 });
    const [spender, other, server] = await Promise.all([t.user("spender"), t.user("other"), t.server()]);
    await freshRateWindow();
    const answers: RawAnswer[] = [];
    for (let i = 0; i < 12; i++) answers.push(await get(spender));
    expect(answers.map((a) => a.status)).toEqual([...Array(10).fill(404), 429, 429]);
    expect(answers.map((a) => rate(a).remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0]);
    const refused = answers[11] as RawAnswer;
    expect(envelope(refused).code).toBe("RATE_LIMITED");
    expect(rate(refused).limit).toBe(10);
    expect(Number(refused.headers.get("retry-after"))).toBe(rate(refused).reset);
    expect((await get(other)).status).toBe(404);
    const byServer = await get(server);
    expect(byServer.status).toBe(404);
    // The tenant's window counted the 10 served requests of the spender and 1 of the other user.
    expect(rate(byServer)).toMatchObject({ limit: 100, remaining: 100 - 12 });
  });

  it("user tokens together fill at most 80% of the tenant's window: the server token keeps the rest", async () => {
    const t = await newTenant({ rate_limit_per_minute: 100 });
    const users = await Promise.all(Array.from({ length: 10 }, (_, i) => t.user(`u${i}`)));
    const server = await t.server();
    await freshRateWindow();
    const statuses: number[] = [];
    for (const token of users) for (let i = 0; i < 10; i++) statuses.push((await get(token)).status);
    expect(statuses.filter((s) => s === 404)).toHaveLength(80);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    const served: number[] = [];
    for (let i = 0; i < 21; i++) served.push((await get(server)).status);
    expect(served).toEqual([...Array(20).fill(404), 429]);
  });

  it("requests whose credential is revoked, expired or badly signed answer 401 and count in no window", async () => {
    const t = await newTenant({ rate_limit_per_minute: 100 });
    const server = await t.server();
    const old = await t.user("gone");
    const forged = `${(await t.user("forged")).slice(0, -4)}AAAA`;
    const expired = await createUserToken(t.apiKey, t.apiSecret, "late", { issuedAt: Math.floor(Date.now() / 1000) - 3600, expiresIn: "1m" });
    expect((await http("POST", "/v1/users/gone/revoke-tokens", { token: server })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2100));
    await freshRateWindow();
    const before = rate(await get(server));
    // From an address of their own: failed authentications spend the address's budget too.
    const ip = newIp();
    for (const token of [old, forged, expired]) {
      for (let i = 0; i < 15; i++) {
        const a = await get(token, ip);
        expect(a.status).toBe(401);
        expect(a.headers.get("ratelimit-remaining")).toBeNull();
      }
    }
    // Only the server's own two requests were counted.
    expect(rate(await get(server)).remaining).toBe(before.remaining - 1);
    // A token the user gets after the revocation has its whole own window.
    const fresh = await t.user("gone");
    const answers: number[] = [];
    for (let i = 0; i < 10; i++) answers.push((await get(fresh)).status);
    expect(answers).toEqual(Array(10).fill(404));
  });

  it("every answer of a verified caller carries RateLimit-Limit, -Remaining and -Reset, errors included", async () => {
    const t = await newTenant({ rate_limit_per_minute: 1000 });
    const server = await t.server();
    await freshRateWindow();
    for (const a of [
      await http("GET", "/v1/feeds/user/x", { token: server }),
      await http("GET", "/v1/users/nobody", { token: server }),
      await http("POST", "/v1/feeds/user/x/activities", { token: server, body: { verb: 1 } }),
      await http("GET", "/v1/promoted", { token: await t.user("u") }),
    ]) {
      const r = rate(a);
      expect([a.status, r.limit > 0, r.remaining >= 0, r.reset >= 1 && r.reset <= 60]).toEqual([a.status, true, true, true]);
    }
  });

  it("costly requests weigh more: a follow by its copy limit, a bulk upsert by its size, suggestions, reactions", async () => {
    const t = await newTenant({ rate_limit_per_minute: 1000 });
    const server = await t.server();
    const user = await t.user("fan");
    await freshRateWindow();
    const post = await http("POST", "/v1/feeds/user/star/activities", { token: server, body: { actor: "user:star", verb: "post", object: "note:1" } });
    /** How much of the window a request took: the remaining before it less the remaining after it. */
    const cost = async (token: string, send: () => Promise<RawAnswer>, ok: number) => {
      const before = rate(await get(token)).remaining;
      const a = await send();
      expect(a.status, JSON.stringify(a.body)).toBe(ok);
      return before - rate(a).remaining;
    };
    expect(await cost(server, () => get(server), 404)).toBe(1);
    expect(await cost(server, () => http("POST", "/v1/feeds/timeline/a/follows", { token: server, body: { target: "user:star", activity_copy_limit: 1000 } }), 201)).toBe(11);
    expect(await cost(server, () => http("POST", "/v1/feeds/timeline/b/follows", { token: server, body: { target: "user:star" } }), 201)).toBe(2);
    const objects = Array.from({ length: 100 }, (_, i) => ({ type: "thing", id: `o${i}`, custom: {} }));
    expect(await cost(server, () => http("POST", "/v1/objects/bulk", { token: server, body: { objects } }), 200)).toBe(10);
    expect(await cost(server, () => http("GET", "/v1/feeds/timeline/a/suggestions", { token: server }), 200)).toBe(5);
    // A user's own window shows the weight of its reactions too.
    expect(await cost(user, () => http("POST", `/v1/activities/${post.body.id}/reactions`, { token: user, body: { kind: "like" } }), 201)).toBe(2);
    expect(await cost(user, () => http("DELETE", `/v1/activities/${post.body.id}/reactions/like`, { token: user }), 204)).toBe(2);
  });
});
