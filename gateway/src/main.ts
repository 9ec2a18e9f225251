import { createInfra, createLogger, createNetworkClients, loadConfig } from "@feeds/kit";
import { runGateway } from "./serve.js";

// The gateway on its own, in front of services that run elsewhere (split mode, Kubernetes): every
// <SERVICE>_URL is required. The one-process system, services included, is @feeds/system.
const config = loadConfig();
const clients = createNetworkClients(config, "the gateway runs no service; system/dist/main.js runs them all in one process");
const log = createLogger(config, "gateway");
await runGateway({ infra: createInfra(config, log, "gateway"), clients });
