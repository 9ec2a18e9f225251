import { runServiceMain } from "@feeds/kit";
import { createEngagementModule } from "./module.js";

await runServiceMain("engagement", async () => createEngagementModule());
