export { createEngagementModule } from "./module.js";
