import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { baseUrl, http, newTenant } from "../support/api.js";

// Overload shedding as clients meet it, with the production settings (this suite sets none): a
// request holds a slot only once its body is read and its caller authenticated, so connections
// that stall their bodies cost nobody else an answer; a burst of ordinary requests on an idle
// system waits its turn and is served, not shed (gateway/test/overload.test.ts has the guard's
// own rules, gateway/test/client-errors.test.ts the answer to a stalled body).

/** Opens a connection that sends a request's headers and then nothing of its 100-byte body. */
function stall(path: string): Promise<Socket> {
  const { hostname, port } = new URL(baseUrl());
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`);
      resolve(socket);
    });
    socket.on("error", reject);
  });
}

describe("overload shedding", () => {
  it("64 connections that never send their bodies leave every other request served (no 429)", async () => {
    const t = await newTenant();
    const server = await t.server();
    // Twice the in-flight limit (32) of stalled bodies, on a route that takes a body.
    const stalled = await Promise.all(Array.from({ length: 64 }, (_, i) => stall(`/v1/users/stalled-${i}`)));
    try {
      await new Promise((r) => setTimeout(r, 200));
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => http("PUT", `/v1/users/u${i}`, { token: server, body: { custom: { i } } })));
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 201));
    } finally {
      for (const s of stalled) s.destroy();
    }
  });

  it("50 concurrent reactions from 50 users on an idle system all answer 201, none shed", async () => {
    const t = await newTenant();
    const server = await t.server();
    const post = await http("POST", "/v1/feeds/user/owner/activities", { token: server, body: { actor: "user:owner", verb: "post", object: "note:burst" } });
    expect(post.status).toBe(201);
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => t.user(`fan${i}`)));
    const answers = await Promise.all(tokens.map((token) => http("POST", `/v1/activities/${post.body.id}/reactions`, { token, body: { kind: "like" } })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s !== 201), JSON.stringify(answers.find((a) => a.status !== 201)?.body)).toEqual([]);
    const activity = await http("GET", `/v1/activities/${post.body.id}`, { token: server });
    expect(activity.body.reaction_counts).toEqual({ like: 50 });
  });
});
