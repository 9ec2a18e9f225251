import { runServiceMain } from "@feeds/kit";
import { buildNotification } from "./build.js";

await runServiceMain("notification", buildNotification);
