export { createCatalogModule } from "./module.js";
export { buildCatalog } from "./build.js";
