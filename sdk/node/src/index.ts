/**
 * @feeds/node — server-side client for the multi-tenant activity-feed service.
 *
 * - token helpers: createServerToken, createUserToken, parseDuration
 * - webhook verification: verifyWebhook (Standard Webhooks)
 * - one error type: FeedsApiError (code, status, requestId, retryAfterSeconds, fields, url)
 * - clients: ServerClient, UserClient (minting from the tenant's credentials or a given token),
 *   OperatorClient; the HTTP core, retry policy and iterators of @feeds/client
 * - everything of @feeds/contract: the route table the clients are built on, the zod schemas of
 *   every request and answer, and the types inferred from them
 */
export * from "@feeds/contract";
export {
  HttpClient,
  BaseClient,
  FeedApiClient,
  backoffDelay,
  buildUrl,
  defaultSleep,
  feedRefString,
  fillPath,
  isRetrySafe,
  pageQuery,
  paginate,
  parseFeedRef,
  providedToken,
} from "@feeds/client";
export type {
  ActivityLists,
  AnswerOf,
  CallOptions,
  CallSpec,
  FeedLists,
  FeedRef,
  HttpClientConfig,
  HttpMethod,
  HttpOptions,
  IterateParams,
  PlainRoute,
  Query,
  QueryPrimitive,
  QueryValue,
  RawResponse,
  RequestSpec,
  RouteInput,
  TokenContext,
  TokenProvider,
  TokenSource,
} from "@feeds/client";
export * from "./tokens.js";
export * from "./options.js";
export * from "./clients.js";
export * from "./operator-client.js";
export * from "./webhooks.js";
