export { createNotificationModule, webhookOptionsOf } from "./module.js";
export { buildNotification } from "./build.js";
