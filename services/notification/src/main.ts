import { runServiceMain } from "@feeds/kit";
import { createNotificationModule } from "./module.js";

await runServiceMain("notification", async (infra) => createNotificationModule({ nats: await infra.nats() }));
