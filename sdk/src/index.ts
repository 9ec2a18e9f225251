/**
 * @feeds/sdk — client for the multi-tenant activity-feed service.
 *
 * - token helpers: createServerToken, createUserToken, parseDuration
 * - one error type: FeedsApiError (code, status, requestId, retryAfterSeconds, fields, url)
 * - clients: ServerClient, UserClient, OperatorClient (each also has raw()/request() and call())
 * - the route table (`routes`) the clients are built on, with the zod schemas of every request
 *   (`schemas*.ts`) and answer (`responses*.ts`); the types (`types.ts`) are inferred from them
 */
export * from "./tokens.js";
export * from "./errors.js";
export * from "./http.js";
export type * from "./types.js";
export * from "./clients.js";
export * from "./operator-client.js";
export * from "./limits.js";
export * from "./route-def.js";
export * from "./routes.js";
export * from "./routes-operator.js";
export * from "./schemas.js";
export * from "./schemas-feeds.js";
export * from "./schemas-graph.js";
export * from "./schemas-objects.js";
export * from "./schemas-promoted.js";
export * from "./schemas-notifications.js";
export * from "./schemas-webhooks.js";
export * from "./schemas-engagement.js";
export * from "./responses.js";
export * from "./responses-feeds.js";
export * from "./responses-engagement.js";
export * from "./responses-webhooks.js";
export * from "./responses-operator.js";
