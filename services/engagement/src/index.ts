export { createEngagementModule } from "./module.js";
export { buildEngagement } from "./build.js";
