import { runServiceMain } from "@feeds/kit";
import { createIdentityModule } from "./module.js";

await runServiceMain("identity", async (infra) =>
  createIdentityModule({
    db: (await infra.mongo()).db,
    redis: await infra.redis(),
    nats: await infra.nats(),
    sessionTtlSeconds: infra.config.SESSION_TTL_SECONDS,
    log: infra.log,
  }),
);
