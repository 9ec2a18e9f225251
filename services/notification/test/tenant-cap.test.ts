import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, newEvent } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { createDeliveryWorker } from "../src/webhooks/delivery-worker.js";
import { createDestinationRepository } from "../src/webhooks/destination-repository.js";
import { createPost } from "../src/webhooks/post.js";
import { createWebhookPublisher } from "../src/webhooks/publisher.js";
import { createRecordRepository, type RecordDoc } from "../src/webhooks/record-repository.js";
import { createSecretBox } from "../src/webhooks/secret-box.js";
import { startLocalReceiver, type LocalReceiver } from "./local-receiver.js";

// A tenant's backlog larger than the whole worker must not hold the worker: with 4 tasks at once
// and 2 deliveries in flight per tenant (small on purpose, so that 12 slow deliveries outnumber
// the worker), a tenant whose 3 destinations answer slowly has at most 2 requests open at once,
// every one of its deliveries arrives in one attempt, and another tenant's delivery goes out at
// once meanwhile. Real MongoDB-wire storage, Redis and NATS JetStream, a namespace of its own.

const SLOW_MS = 600;

describe("deliveries in flight per tenant", () => {
  const env = createTestEnv("webhook_tenant_cap", { db: true, redis: true, nats: { queues: ["webhooks"] } });
  let receiver: LocalReceiver | undefined;
  let open = 0;
  let peak = 0;
  const slow: string[] = [];
  const fast: number[] = [];

  beforeAll(async () => {
    await env.open();
    receiver = await startLocalReceiver((req, res) => {
      req.resume();
      req.on("end", () => {
        if (req.url === "/fast") return void (fast.push(Date.now()), res.writeHead(200).end());
        open++;
        peak = Math.max(peak, open);
        setTimeout(() => {
          open--;
          slow.push(req.url ?? "");
          res.writeHead(200).end();
        }, SLOW_MS);
      });
    });
  });

  afterAll(async () => {
    receiver?.close();
    await env.close();
  });

  it("a tenant over its cap waits without holding the worker; every delivery in one attempt; another tenant's at once", { timeout: 30_000 }, async () => {
    const { db, redis, nats } = env;
    const destinations = createDestinationRepository(db, redis, createSecretBox(randomBytes(32)), createOutbox({ db, nats, log: env.log }));
    const records = createRecordRepository(db, redis);
    await records.ensureIndexes();
    if (!receiver) throw new Error("the receiver did not start");
    const { port } = receiver;
    const [busy, other] = [`t-busy-${randomBytes(3).toString("hex")}`, `t-other-${randomBytes(3).toString("hex")}`];
    for (const path of ["/slow-1", "/slow-2", "/slow-3"]) {
      await destinations.create({ _id: randomUUID(), tenant_id: busy, url: `http://127.0.0.1:${port}${path}`, events: [], secret: "whsec_AAAAAAAA", created_at: new Date() });
    }
    await destinations.create({ _id: randomUUID(), tenant_id: other, url: `http://127.0.0.1:${port}/fast`, events: [], secret: "whsec_AAAAAAAA", created_at: new Date() });
    const post = createPost({ allowPrivate: true, timeoutMs: 5000 });
    const worker = createDeliveryWorker({
      nats,
      log: env.log,
      destinations,
      records,
      post,
      options: { attemptTimeoutMs: 5000, retryScheduleMs: [10_000], concurrency: 4, perTenant: 2 },
    });
    const publish = createWebhookPublisher({ nats, destinations, records });
    for (let i = 0; i < 4; i++) await publish(newEvent("webhook.test", busy, { i }));
    await worker.start();
    try {
      // The busy tenant's first two attempts are open; its ten other tasks outnumber the worker's 4.
      const waitFor = async (what: string, check: () => boolean, ms: number) => {
        const deadline = Date.now() + ms;
        while (!check()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await waitFor("the busy tenant's attempts", () => open >= 2, 5000);
      const published = Date.now();
      await publish(newEvent("webhook.test", other, {}));
      await waitFor("the other tenant's delivery", () => fast.length === 1, 5000);
      // Inside one slow answer: not behind the busy tenant's 12 × 600 ms / 2.
      expect((fast[0] ?? Infinity) - published).toBeLessThan(SLOW_MS);

      await waitFor("every slow delivery", () => slow.length >= 12, 15_000);
      expect(peak).toBe(2);
      expect(slow.sort()).toEqual(["/slow-1", "/slow-2", "/slow-3"].flatMap((p) => [p, p, p, p]));
      // A task that waited for its tenant counted no attempt (records are stored just after).
      const stored = () => db.collection<RecordDoc>("webhook_events").find({ tenant_id: busy }).toArray();
      let rows = await stored();
      for (let i = 0; i < 50 && !(rows.length === 12 && rows.every((r) => r.status === "published")); i++) {
        await new Promise((r) => setTimeout(r, 100));
        rows = await stored();
      }
      expect(rows.map((r) => [r.status, r.attempts])).toEqual(Array.from({ length: 12 }, () => ["published", 1]));
    } finally {
      await worker.stop();
      post.close();
    }
  });
});
