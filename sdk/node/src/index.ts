/**
 * @feeds/node — server-side client for the multi-tenant activity-feed service.
 *
 * - token helpers: createServerToken, createUserToken, parseDuration
 * - one error type: FeedsApiError (code, status, requestId, retryAfterSeconds, fields, url)
 * - clients: ServerClient, UserClient, OperatorClient (each also has raw()/request() and call())
 * - everything of @feeds/contract: the route table the clients are built on, the zod schemas of
 *   every request and answer, and the types inferred from them
 */
export * from "@feeds/contract";
export * from "./tokens.js";
export * from "./http.js";
export * from "./clients.js";
export * from "./operator-client.js";
