import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conflict, forbidden, toConnectError, unauthenticated } from "@feeds/kit";
import { installErrorHandling } from "../src/http.js";

// The envelope of a refusal (interface section 5 rule 12): the same words on the wire whatever
// the reason, the reason in the log under the request id.

const logged: { obj: Record<string, unknown>; msg: string }[] = [];
const log = {
  info: (obj: Record<string, unknown>, msg: string) => void logged.push({ obj, msg }),
  error: (obj: Record<string, unknown>, msg: string) => void logged.push({ obj, msg }),
} as unknown as Parameters<typeof installErrorHandling>[1];

// path → the reason, and what the route throws with it (ours, or a service's over RPC).
const reasons: Record<string, [string, (reason: string) => unknown]> = {
  "/suspended": ["tenant suspended", forbidden],
  "/own-feed": ["a user token may write only to its own feed", forbidden],
  "/service-403": ["not your activity", (r) => toConnectError(forbidden(r))],
  "/revoked": ["token revoked", unauthenticated],
  "/service-401": ["invalid email or password", (r) => toConnectError(unauthenticated(r))],
  "/last-owner": ["the tenant would have no active owner", conflict],
};

let app: FastifyInstance;
beforeAll(async () => {
  app = Fastify({ genReqId: () => randomUUID() });
  installErrorHandling(app, log);
  for (const [path, [reason, err]] of Object.entries(reasons)) {
    app.get(path, async () => {
      throw err(reason);
    });
  }
  await app.ready();
});
afterAll(() => app.close());

async function answer(path: string) {
  const res = await app.inject({ method: "GET", url: path });
  return { status: res.statusCode, error: res.json<{ error: { code: string; message: string; requestId: string } }>().error };
}

describe("401 and 403 envelopes", () => {
  it("carry one message per status on the wire and the reason in the log with the request id", async () => {
    for (const [paths, status] of [[["/suspended", "/own-feed", "/service-403"], 403], [["/revoked", "/service-401"], 401]] as const) {
      const answers = await Promise.all(paths.map(answer));
      expect(answers.map((a) => a.status)).toEqual(paths.map(() => status));
      expect(new Set(answers.map((a) => a.error.message)).size).toBe(1);
      for (const [i, a] of answers.entries()) {
        const [reason] = reasons[paths[i]!]!;
        expect(a.error.message).not.toContain(reason);
        const entry = logged.find((l) => l.obj.requestId === a.error.requestId);
        expect(entry).toMatchObject({ obj: { reason, code: a.error.code }, msg: "request refused" });
      }
    }
  });

  it("keeps the reason of a 409 (the interface asks for it)", async () => {
    const a = await answer("/last-owner");
    expect(a.status).toBe(409);
    expect(a.error.message).toBe("the tenant would have no active owner");
  });
});
