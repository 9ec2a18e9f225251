export { createNotificationModule, webhookOptionsOf } from "./module.js";
