import { runServiceMain } from "@feeds/kit";
import { createGraphModule } from "./module.js";

await runServiceMain("graph", async () => createGraphModule());
