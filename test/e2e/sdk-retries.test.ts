import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { FeedsApiError, ServerClient } from "@feeds/node";
import { baseUrl, newTenant } from "../support/api.js";

// The SDK's retries through the real gateway, behind a fault-injecting proxy that passes the first
// POST on and answers the client 500 INTERNAL instead of the gateway's answer (the write is done,
// its answer lost): a POST with an Idempotency-Key is retried and the gateway replays the first
// answer, so one comment exists; a POST without key is not retried.

const proxies: Server[] = [];
afterAll(() => {
  for (const p of proxies) p.close();
});

/** A proxy to the gateway that swallows the answer of the first POST; it counts what it saw. */
async function lossyProxy(): Promise<{ url: string; seen: { method: string; key: string | undefined; status: number; replayed: string | null }[] }> {
  const seen: { method: string; key: string | undefined; status: number; replayed: string | null }[] = [];
  let lost = false;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers.set(k, v);
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      void fetch(`${baseUrl()}${req.url ?? "/"}`, { method: req.method ?? "GET", headers, body }).then(async (answer) => {
        const text = await answer.text();
        seen.push({ method: req.method ?? "", key: req.headers["idempotency-key"] as string | undefined, status: answer.status, replayed: answer.headers.get("idempotent-replayed") });
        if (req.method === "POST" && !lost) {
          lost = true;
          res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: "INTERNAL", message: "injected", requestId: "proxy" } }));
          return;
        }
        const out: Record<string, string> = {};
        answer.headers.forEach((v, k) => {
          if (k !== "content-length" && k !== "content-encoding" && k !== "transfer-encoding") out[k] = v;
        });
        res.writeHead(answer.status, out).end(text);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxies.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("SDK retries through the gateway", () => {
  it("a POST with a key, its first answer lost, is retried and creates one thing", async () => {
    const t = await newTenant();
    const direct = new ServerClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret });
    await direct.upsertUser("ann", {});
    const activity = await direct.addActivity("user:ann", { actor: "ann", verb: "post", object: "note:1" });

    const proxy = await lossyProxy();
    const client = new ServerClient({ baseUrl: proxy.url, apiKey: t.apiKey, apiSecret: t.apiSecret, sleep: async () => {} });
    const reply = await client.addComment(activity.id, { text: "once", user_id: "ann" });
    expect(proxy.seen.map((s) => s.method)).toEqual(["POST", "POST"]);
    expect(proxy.seen[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(proxy.seen[1]?.key).toBe(proxy.seen[0]?.key);
    expect(proxy.seen.map((s) => [s.status, s.replayed])).toEqual([[201, null], [201, "true"]]);
    const comments = await direct.comments(activity.id);
    expect(comments.results.map((c) => c.id)).toEqual([reply.id]);
  });

  it("a POST without key, its answer lost, is sent once: the caller sees the error", async () => {
    const t = await newTenant();
    const direct = new ServerClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret });
    await direct.upsertUser("ann", {});
    const activity = await direct.addActivity("user:ann", { actor: "ann", verb: "post", object: "note:1" });
    const proxy = await lossyProxy();
    const client = new ServerClient({ baseUrl: proxy.url, apiKey: t.apiKey, apiSecret: t.apiSecret, sleep: async () => {} });
    const error = await client.addComment(activity.id, { text: "once", user_id: "ann" }, { idempotencyKey: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FeedsApiError);
    expect(proxy.seen).toHaveLength(1);
    expect((await direct.comments(activity.id)).results).toHaveLength(1);
  });
});
