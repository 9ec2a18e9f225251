import { describe, expect, it } from "vitest";
import { http, newOperator, newTenant, staffToken } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";

// The console's change signal: counts of the tenant's activities, users and webhook event
// records with a version that moves on every change, an ETag and 304, answered without a
// database command per call (the session, the counts and the versions all come from Redis).

const signal = (token: string, etag?: string) => http("GET", "/operator/signal", { token, ...(etag ? { headers: { "if-none-match": etag } } : {}) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("GET /operator/signal", () => {
  it("counts activities, users and webhook events; moves on every change; 304 while unchanged", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    const server = await t.server();
    const first = await signal(owner.token);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ version: expect.any(Number), counts: { activities: 0, users: 0, webhook_events: 0 } });
    const etag = first.headers.get("etag") as string;
    expect((await signal(member.token, etag)).status).toBe(304);

    expect((await http("PUT", "/v1/users/alice", { token: server, body: { custom: {} } })).status).toBe(201);
    const add = await http("POST", "/v1/feeds/user/alice/activities", { token: server, body: { actor: "user:alice", verb: "post", object: "o:1" } });
    expect(add.status).toBe(201);
    const afterWrites = await signal(owner.token, etag);
    expect(afterWrites.status).toBe(200);
    expect(afterWrites.body.counts).toEqual({ activities: 1, users: 1, webhook_events: 0 });
    expect(afterWrites.body.version).toBeGreaterThan(first.body.version);

    // A change of rows that exist moves the version, not the counts.
    expect((await http("PUT", "/v1/users/alice", { token: server, body: { custom: { n: 2 } } })).status).toBe(200);
    const afterUpdate = await signal(owner.token, afterWrites.headers.get("etag") as string);
    expect(afterUpdate.status).toBe(200);
    expect(afterUpdate.body.counts).toEqual({ activities: 1, users: 1, webhook_events: 0 });
    expect(afterUpdate.body.version).toBeGreaterThan(afterWrites.body.version);
    expect((await http("DELETE", `/v1/activities/${add.body.id}`, { token: server })).status).toBe(204);
    const afterDelete = await signal(owner.token, afterUpdate.headers.get("etag") as string);
    expect(afterDelete.status).toBe(200);
    expect(afterDelete.body.counts.activities).toBe(1); // the inspector lists tombstones

    // A webhook destination and a test event: one record in the log.
    const dest = await http("POST", "/v1/webhooks", { token: server, body: { url: "http://127.0.0.1:9/hook" } });
    expect(dest.status).toBe(201);
    expect((await http("POST", "/operator/webhooks/test", { token: owner.token })).status).toBe(202);
    let events = 0;
    for (let i = 0; i < 100 && events < 1; i++) {
      events = (await signal(owner.token)).body.counts.webhook_events as number;
      if (events < 1) await sleep(100);
    }
    expect(events).toBe(1);
  });

  it("is for the tenant's operators: staff 403, no session 401", async () => {
    expect((await signal(await staffToken())).status).toBe(403);
    expect((await http("GET", "/operator/signal")).status).toBe(401);
  });

  it("asks MongoDB nothing per call once warm", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    for (let i = 0; i < 2; i++) expect((await signal(owner.token)).status).toBe(200);
    const commands = async () => total(await scrape(), "feeds_mongodb_commands_total", { work: "GET /operator/signal" });
    const before = await commands();
    for (let i = 0; i < 10; i++) expect((await signal(owner.token)).status).toBe(200);
    expect(await commands()).toBe(before);
    expect(before).toBeGreaterThan(0);
  });
});
