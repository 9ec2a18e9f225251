import { runServiceMain } from "@feeds/kit";
import { createCatalogModule } from "./module.js";

await runServiceMain("catalog", async () => createCatalogModule());
