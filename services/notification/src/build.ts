import { requireWebhookKey, type ServiceBuild } from "@feeds/kit";
import { createNotificationModule, webhookOptionsOf } from "./module.js";

/** The notification module from a process's infrastructure (its main, or the one-process system). */
export const buildNotification: ServiceBuild = async (infra, peers) => {
  // Before any connection: a missing key stops the start at once, naming the variable.
  const webhookKey = requireWebhookKey(infra.config);
  return createNotificationModule({
    db: (await infra.mongo()).db,
    nats: await infra.nats(),
    redis: await infra.redis(),
    peers,
    log: infra.log,
    webhooks: webhookOptionsOf(infra.config),
    webhookKey,
  });
};
