import { runServiceMain } from "@feeds/kit";
import { createGraphModule } from "./module.js";

await runServiceMain("graph", async (infra) => createGraphModule({ db: (await infra.mongo()).db, log: infra.log }));
