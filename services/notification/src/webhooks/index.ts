import type { Db } from "mongodb";
import type { ServiceImpl } from "@connectrpc/connect";
import { createOutbox, createWorkerBeats, type Logger, type Nats, type RedisConn } from "@feeds/kit";
import type { WebhookService } from "@feeds/proto/feeds/notification/v1/webhook";
import { createDeliveryWorker, type DeliveryOptions } from "./delivery-worker.js";
import { createDestinationRepository } from "./destination-repository.js";
import { createPost } from "./post.js";
import { createWebhookPublisher } from "./publisher.js";
import { createRecordRepository } from "./record-repository.js";
import { createSecretBox } from "./secret-box.js";
import type { EventHandler } from "../worker.js";
import { createWebhookService } from "./routes.js";

export interface WebhookOptions extends DeliveryOptions {
  /** WEBHOOK_ALLOW_PRIVATE: destinations may be private, loopback or link-local addresses. */
  allowPrivate: boolean;
}

/**
 * Webhooks: destinations and their RPCs, the notify worker's handler, the delivery worker.
 * `secretsKey` (FEEDS_WEBHOOK_KEY) seals the signing secrets at rest.
 */
export async function createWebhooks(deps: { db: Db; redis: RedisConn; nats: Nats; log: Logger; options: WebhookOptions; secretsKey: Buffer }) {
  // The pending changes of the destinations' cap (destination-repository.ts), finished by its relay.
  const outbox = createOutbox({ db: deps.db, nats: deps.nats, log: deps.log });
  const destinations = createDestinationRepository(deps.db, deps.redis, createSecretBox(deps.secretsKey), outbox);
  const records = createRecordRepository(deps.db, deps.redis);
  await Promise.all([destinations.ensureIndexes(), records.ensureIndexes(), outbox.ensureIndexes()]);
  const post = createPost({ allowPrivate: deps.options.allowPrivate, timeoutMs: deps.options.attemptTimeoutMs });
  const worker = createDeliveryWorker({
    nats: deps.nats,
    log: deps.log,
    destinations,
    records,
    post,
    options: deps.options,
    beats: createWorkerBeats(deps.redis),
  });
  const service: ServiceImpl<typeof WebhookService> = createWebhookService({
    destinations,
    records,
    nats: deps.nats,
    allowPrivate: deps.options.allowPrivate,
  });
  const handleEvent: EventHandler = createWebhookPublisher({ nats: deps.nats, destinations, records });
  const sealing = new AbortController();
  let sealed: Promise<void> = Promise.resolve();
  return {
    service,
    handleEvent,
    async start() {
      await worker.start();
      outbox.startRelay();
      // Secrets an older release stored in plaintext, sealed in the background (reads open both).
      sealed = destinations.sealPlaintext(sealing.signal).then(
        (n) => void (n > 0 && deps.log.info({ sealed: n }, "webhook signing secrets sealed")),
        (err: unknown) => deps.log.warn({ err }, "sealing plaintext webhook signing secrets failed; the next start tries again"),
      );
    },
    async stop() {
      sealing.abort();
      await Promise.all([worker.stop(), sealed, outbox.stop()]);
      post.close();
    },
  };
}
