import { requireMasterKey, runServiceMain } from "@feeds/kit";
import { createTenancyModule } from "./module.js";

await runServiceMain("tenancy", async (infra) =>
  createTenancyModule({
    db: (await infra.mongo()).db,
    redis: await infra.redis(),
    masterKey: requireMasterKey(infra.config),
    log: infra.log,
  }),
);
