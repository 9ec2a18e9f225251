import { createPeerClients, runServiceMain } from "@feeds/kit";
import { createEngagementModule } from "./module.js";

await runServiceMain("engagement", async (infra) =>
  createEngagementModule({
    db: (await infra.mongo()).db,
    redis: await infra.redis(),
    nats: await infra.nats(),
    peers: createPeerClients(infra.config),
    log: infra.log,
  }),
);
