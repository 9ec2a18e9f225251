export { createFeedModule } from "./module.js";
export { buildFeed } from "./build.js";
