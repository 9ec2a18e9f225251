/**
 * @feeds/client — the browser client of the activity-feed service (ESM, no schema library at
 * run time).
 *
 * - UserClient: an end-user's client; its token comes from your `tokenProvider` (your backend
 *   mints it with @feeds/node's createUserToken), asked again once after a 401
 * - OperatorClient: the operator console's client (operator session token)
 * - FeedsApiError with its typed `code`, the retry policy, per-call `signal`, paging iterators
 *
 * It never holds a tenant secret: server tokens and ServerClient live in @feeds/node.
 */
export { FeedsApiError, ErrorCodes, isFeedsApiError, parseRetryAfter } from "@feeds/contract/errors";
export type { ErrorCode, FieldError } from "@feeds/contract/errors";
export * from "./http.js";
export { isRetrySafe } from "./retry-policy.js";
export * from "./client-base.js";
export * from "./feed-api-client.js";
export type { StreamEvent, StreamEventType, StreamOptions } from "./live-stream.js";
export * from "./user-client.js";
export * from "./operator-client.js";
