import { runServiceMain } from "@feeds/kit";
import { createCatalogModule } from "./module.js";

await runServiceMain("catalog", async (infra) => createCatalogModule({ db: (await infra.mongo()).db, redis: await infra.redis(), log: infra.log }));
