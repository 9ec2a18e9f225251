import { createPeerClients, runServiceMain } from "@feeds/kit";
import { createGraphModule } from "./module.js";

await runServiceMain("graph", async (infra) =>
  createGraphModule({
    db: (await infra.mongo()).db,
    nats: await infra.nats(),
    redis: await infra.redis(),
    peers: createPeerClients(infra.config),
    log: infra.log,
  }),
);
