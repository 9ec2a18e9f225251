export { createTenancyModule } from "./module.js";
export { buildTenancy } from "./build.js";
