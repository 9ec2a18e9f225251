import { createInfra, createLogger, loadConfig } from "@feeds/kit";
import { runGateway } from "@feeds/gateway";
import { composeServices } from "./compose.js";

// The whole system in one process (`npm start`, most tests): every service not named by a
// <SERVICE>_URL, and the gateway in front of them.
const config = loadConfig();
const log = createLogger(config, "gateway");
const infra = createInfra(config, log, "gateway");
const { clients, modules } = await composeServices(infra);
await runGateway({ infra, clients, alongside: modules });
