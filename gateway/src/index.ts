// What a composition needs of the gateway: build the app, or run the whole gateway process.
export { buildGateway, type GatewayDeps } from "./app.js";
export { runGateway, type GatewayRun } from "./serve.js";
