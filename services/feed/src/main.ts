import { runServiceMain } from "@feeds/kit";
import { createFeedModule } from "./module.js";

await runServiceMain("feed", async (infra) => createFeedModule({ nats: await infra.nats() }));
