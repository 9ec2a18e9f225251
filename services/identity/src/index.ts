export { createIdentityModule, revocationKey, REVOCATION_TTL_SECONDS } from "./module.js";
