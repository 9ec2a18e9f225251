export { createNotificationModule } from "./module.js";
