import { runServiceMain } from "@feeds/kit";
import { createTenancyModule } from "./module.js";

await runServiceMain("tenancy", async (infra) =>
  createTenancyModule({
    db: (await infra.mongo()).db,
    redis: await infra.redis(),
    masterKey: Buffer.from(infra.config.FEEDS_MASTER_KEY, "base64"),
    log: infra.log,
  }),
);
