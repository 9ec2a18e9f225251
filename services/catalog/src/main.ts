import { runServiceMain } from "@feeds/kit";
import { buildCatalog } from "./build.js";

await runServiceMain("catalog", buildCatalog);
