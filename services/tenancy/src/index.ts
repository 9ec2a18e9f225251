export { createTenancyModule, tenantVersionKey } from "./module.js";
