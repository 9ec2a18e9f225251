import { createPeerClients, runServiceMain } from "@feeds/kit";
import { createFeedModule } from "./module.js";

await runServiceMain("feed", async (infra) =>
  createFeedModule({
    db: (await infra.mongo()).db,
    nats: await infra.nats(),
    redis: await infra.redis(),
    peers: createPeerClients(infra.config),
    log: infra.log,
  }),
);
