export { createFeedModule } from "./module.js";
