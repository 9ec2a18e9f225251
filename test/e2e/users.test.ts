import { describe, expect, it } from "vitest";
import { envelope, http, newTenant } from "../support/api.js";

describe("users", () => {
  it("upsert answers 201 then 200, read and /v1/me show it", async () => {
    const t = await newTenant();
    const server = await t.server();
    const created = await http("PUT", "/v1/users/alice", { token: server, body: { custom: { name: "Alice", n: 12345678901234 } } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: "alice", custom: { name: "Alice", n: 12345678901234 } });
    expect(Date.parse(created.body.created_at)).not.toBeNaN();
    const updated = await http("PUT", "/v1/users/alice", { token: server, body: { custom: { name: "Alicia" } } });
    expect(updated.status).toBe(200);
    expect(updated.body.custom).toEqual({ name: "Alicia" });
    expect(updated.body.created_at).toBe(created.body.created_at);
    const read = await http("GET", "/v1/users/alice", { token: await t.user("bob") });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(updated.body);
    const me = await http("GET", "/v1/me", { token: await t.user("alice") });
    expect(me.body).toEqual(updated.body);
    const noRecord = await http("GET", "/v1/me", { token: await t.user("nobody") });
    expect(noRecord.status).toBe(404);
    expect(envelope(noRecord).code).toBe("NOT_FOUND");
  });

  it("concurrent first upserts of one user: one 201, the others 200, none fails", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => http("PUT", `/v1/users/racer${round}`, { token: server, body: { custom: { i } } })),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    }
  });

  it("validates ids and bodies", async () => {
    const t = await newTenant();
    const server = await t.server();
    const badId = await http("PUT", `/v1/users/${"x".repeat(129)}`, { token: server, body: { custom: {} } });
    expect(badId.status).toBe(400);
    expect(envelope(badId).fields?.[0]?.path).toBe("id");
    const badChars = await http("PUT", "/v1/users/a%20b", { token: server, body: { custom: {} } });
    expect(badChars.status).toBe(400);
    const badCustom = await http("PUT", "/v1/users/ok", { token: server, body: { custom: [1, 2] } });
    expect(badCustom.status).toBe(400);
    expect(envelope(badCustom).fields?.[0]?.path).toBe("custom");
    const tooBig = await http("PUT", "/v1/users/ok", { token: server, body: { custom: { s: "x".repeat(70 * 1024) } } });
    expect(tooBig.status).toBe(400);
    expect(envelope(tooBig).fields?.[0]?.path).toBe("custom");
  });

  it("batch import: envelope rules, per-item results, idempotent rerun", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (const body of [{}, { users: [] }, { users: "x" }, { users: [1] }, { users: Array.from({ length: 101 }, (_, i) => ({ id: `u${i}` })) }]) {
      const res = await http("POST", "/v1/batch/users", { token: server, body });
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
    const items = [{ id: "b1", custom: { a: 1 } }, { id: "bad id!", custom: {} }, { id: "b2" }, { custom: {} }];
    const res = await http("POST", "/v1/batch/users", { token: server, body: { users: items } });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { index: 0, ok: true, id: "b1" },
      { index: 1, ok: false, code: "VALIDATION_FAILED" },
      { index: 2, ok: true, id: "b2" },
      { index: 3, ok: false, code: "VALIDATION_FAILED" },
    ]);
    const rerun = await http("POST", "/v1/batch/users", { token: server, body: { users: items } });
    expect(rerun.body).toEqual(res.body);
    expect((await http("GET", "/v1/users/b1", { token: server })).body.custom).toEqual({ a: 1 });
    expect((await http("GET", "/v1/users/b2", { token: server })).body.custom).toEqual({});
  });
});
