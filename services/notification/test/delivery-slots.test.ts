import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, newEvent } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { createDeliveryWorker } from "../src/webhooks/delivery-worker.js";
import { createDestinationRepository } from "../src/webhooks/destination-repository.js";
import { createPost } from "../src/webhooks/post.js";
import { createWebhookPublisher } from "../src/webhooks/publisher.js";
import { createRecordRepository } from "../src/webhooks/record-repository.js";
import { createSecretBox } from "../src/webhooks/secret-box.js";
import { startLocalReceiver, type LocalReceiver } from "./local-receiver.js";

// One dead destination must not take the delivery worker's attempts from the others: with 4
// attempts in flight in all and 2 per destination, a burst to a destination that never answers
// leaves 2 for a live one, which gets its whole burst long before the dead one's first attempt
// is cut off. Real MongoDB-wire storage, Redis and NATS JetStream, a namespace of its own.

const ATTEMPT_MS = 3000;

describe("per-destination attempt slots", () => {
  const env = createTestEnv("webhook_slots", { db: true, redis: true, nats: { queues: ["webhooks"] } });
  let receiver: LocalReceiver | undefined;
  const live: number[] = [];

  beforeAll(async () => {
    await env.open();
    receiver = await startLocalReceiver((req, res) => {
      req.resume();
      // /dead never answers; /live answers at once.
      if (req.url === "/live") req.on("end", () => (live.push(Date.now()), res.writeHead(200).end()));
    });
  });

  afterAll(async () => {
    receiver?.close();
    await env.close();
  });

  it("a burst to a destination that never answers leaves the live destination its attempts", { timeout: 30_000 }, async () => {
    const { db, redis, nats } = env;
    const destinations = createDestinationRepository(db, redis, createSecretBox(randomBytes(32)), createOutbox({ db, nats, log: env.log }));
    const records = createRecordRepository(db, redis);
    if (!receiver) throw new Error("the receiver did not start");
    const { port } = receiver;
    const tenant = "t-slots";
    for (const path of ["/dead", "/live"]) {
      await destinations.create({ _id: randomUUID(), tenant_id: tenant, url: `http://127.0.0.1:${port}${path}`, events: [], secret: "whsec_AAAAAAAA", created_at: new Date() });
    }
    const post = createPost({ allowPrivate: true, timeoutMs: ATTEMPT_MS });
    const worker = createDeliveryWorker({
      nats,
      log: env.log,
      destinations,
      records,
      post,
      options: { attemptTimeoutMs: ATTEMPT_MS, retryScheduleMs: [10_000], concurrency: 4, perDestination: 2 },
    });
    const publish = createWebhookPublisher({ nats, destinations, records });
    const started = Date.now();
    for (let i = 0; i < 12; i++) await publish(newEvent("webhook.test", tenant, { i }));
    await worker.start();
    try {
      const deadline = Date.now() + 20_000;
      while (live.length < 12 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(live).toHaveLength(12);
      // Every live delivery well before the dead destination's first attempts are cut off.
      expect(Math.max(...live) - started).toBeLessThan(ATTEMPT_MS - 500);
    } finally {
      await worker.stop();
      post.close();
    }
  });
});
