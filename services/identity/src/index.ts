export { createIdentityModule } from "./module.js";
export { buildIdentity } from "./build.js";
