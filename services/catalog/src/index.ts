export { createCatalogModule } from "./module.js";
