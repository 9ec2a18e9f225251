export { createGraphModule } from "./module.js";
