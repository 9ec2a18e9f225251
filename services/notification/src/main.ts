import { createPeerClients, runServiceMain } from "@feeds/kit";
import { createNotificationModule, webhookOptionsOf } from "./module.js";

await runServiceMain("notification", async (infra) =>
  createNotificationModule({
    db: (await infra.mongo()).db,
    nats: await infra.nats(),
    redis: await infra.redis(),
    peers: createPeerClients(infra.config),
    log: infra.log,
    webhooks: webhookOptionsOf(infra.config),
  }),
);
