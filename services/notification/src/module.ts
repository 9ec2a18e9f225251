import type { Db } from "mongodb";
import { createWorkerBeats, ensureQueue, type Clients, type Config, type Logger, type Nats, type RedisConn, type ServiceModule } from "@feeds/kit";
import { NotificationService } from "@feeds/proto/feeds/notification/v1/notification";
import { WebhookService } from "@feeds/proto/feeds/notification/v1/webhook";
import { createNotifications, type NotificationAdded } from "./notifications/index.js";
import { createNotifyWorker } from "./worker.js";
import { createWebhooks, type WebhookOptions } from "./webhooks/index.js";

/**
 * The notification service: owns the `notify` work queue (every event of the system) and the
 * `webhooks` queue (one delivery task per event and destination), and runs the notify worker.
 */
export async function createNotificationModule(deps: {
  db: Db;
  nats: Nats;
  redis: RedisConn;
  /** Identity, for the actor_user of notifications. */
  peers: () => Pick<Clients, "users">;
  log: Logger;
  webhooks: WebhookOptions;
  /** FEEDS_WEBHOOK_KEY: seals webhook signing secrets at rest. */
  webhookKey: Buffer;
  /** Run the notify worker in this process (default true). */
  worker?: boolean;
  /** Hears of every new notification with its counts and group summary (the realtime stream's events). */
  onNotificationAdded?: (added: NotificationAdded) => Promise<void>;
}): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "notify");
  await ensureQueue(deps.nats, "webhooks");
  const notifications = await createNotifications({
    db: deps.db,
    nats: deps.nats,
    redis: deps.redis,
    peers: deps.peers,
    log: deps.log,
    ...(deps.onNotificationAdded ? { onAdded: deps.onNotificationAdded } : {}),
  });
  const webhooks = await createWebhooks({ db: deps.db, redis: deps.redis, nats: deps.nats, log: deps.log, options: deps.webhooks, secretsKey: deps.webhookKey });
  // Notifications first: a failure redelivers the event to both, and both are idempotent.
  const worker = createNotifyWorker({
    nats: deps.nats,
    log: deps.log,
    handlers: [notifications.handler, webhooks.handleEvent],
    beats: createWorkerBeats(deps.redis),
  });
  return {
    name: "notification",
    routes: (router) => {
      router.service(NotificationService, notifications.service);
      router.service(WebhookService, webhooks.service);
    },
    async start() {
      notifications.start();
      if (deps.worker === false) return;
      await worker.start();
      await webhooks.start();
    },
    async stop() {
      await worker.stop();
      await webhooks.stop();
      await notifications.stop();
    },
  };
}

/** The webhook settings of the configuration. */
export const webhookOptionsOf = (config: Config): WebhookOptions => ({
  allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
  attemptTimeoutMs: config.WEBHOOK_ATTEMPT_TIMEOUT_MS,
  retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS,
});
