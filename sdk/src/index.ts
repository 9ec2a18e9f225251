/**
 * @feeds/sdk — client for the multi-tenant activity-feed service.
 *
 * - token helpers: createServerToken, createUserToken, parseDuration
 * - one error type: FeedsApiError (code, status, requestId, retryAfterSeconds, fields, url)
 * - clients: ServerClient, UserClient, OperatorClient (each also has raw()/request() and call())
 */
export * from "./tokens.js";
export * from "./errors.js";
export * from "./http.js";
export type * from "./types.js";
export * from "./clients.js";
export * from "./schemas.js";
export * from "./schemas-feeds.js";
export * from "./schemas-graph.js";
export * from "./schemas-objects.js";
export * from "./schemas-promoted.js";
export * from "./schemas-notifications.js";
export * from "./schemas-webhooks.js";
export * from "./schemas-engagement.js";
