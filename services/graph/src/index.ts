export { createGraphModule } from "./module.js";
export { buildGraph } from "./build.js";
