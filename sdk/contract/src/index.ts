/**
 * @feeds/contract — the public API of the activity-feed service, as data.
 *
 * - the route table (`routes`, `feedApiRoutes`, `operatorRoutes`, `adminRoutes`): verb, path,
 *   who may call it, and the zod schemas of its request and of each answer
 * - the schemas of every request (`schemas*.ts`) and answer (`responses*.ts`), and the types
 *   inferred from them (`types.ts`)
 * - the request limits (`requestLimits`) and the error codes of the interface (`ErrorCodes`)
 * - schema-free entries for browsers: `@feeds/contract/routes` (the table as plain data,
 *   `routeTable`) and `@feeds/contract/errors` (FeedsApiError, ErrorCodes)
 *
 * The gateway validates and documents every route from this table; @feeds/node and
 * @feeds/client build their methods on it.
 */
export * from "./errors.js";
export type * from "./types.js";
export * from "./limits.js";
export * from "./route-def.js";
export * from "./route-table.js";
export * from "./answer-validator.js";
export * from "./routes.js";
export * from "./routes-operator.js";
export * from "./routes-origins.js";
export * from "./schemas.js";
export * from "./schemas-feeds.js";
export * from "./schemas-graph.js";
export * from "./schemas-objects.js";
export * from "./schemas-promoted.js";
export * from "./schemas-notifications.js";
export * from "./schemas-webhooks.js";
export * from "./schemas-stream.js";
export * from "./schemas-engagement.js";
export * from "./responses.js";
export * from "./responses-feeds.js";
export * from "./responses-engagement.js";
export * from "./responses-webhooks.js";
export * from "./responses-operator.js";
