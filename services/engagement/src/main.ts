import { runServiceMain } from "@feeds/kit";
import { createEngagementModule } from "./module.js";

await runServiceMain("engagement", async (infra) => createEngagementModule({ db: (await infra.mongo()).db }));
