import { decodeJwt } from "jose";
import { FeedApiClient, HttpClient, defaultSleep, paginate, pageQuery, type CallOptions, type IterateParams } from "@feeds/client";
import { routeTable } from "@feeds/contract/routes";
import type {
  BatchActivityInput,
  BatchFollowInput,
  BatchResult,
  Blocklist,
  BulkObjectsResult,
  CreatedWebhook,
  CreatePromotedInput,
  CreateWebhookInput,
  FeedObject,
  JsonObject,
  ObjectInput,
  Page,
  PageParams,
  PatchObjectInput,
  PromotedRecord,
  ReactionKinds,
  RevokeTokensResult,
  User,
  UserInput,
  WebhookDestination,
} from "@feeds/contract";
import { createServerToken, createUserToken, parseDuration, DEFAULT_USER_TOKEN_EXPIRES_IN } from "./tokens.js";
import { MintedToken } from "./minted-token.js";
import { validatorOf, type ClientOptions } from "./options.js";

const serverRoutes = routeTable.server;
const userRoutes = routeTable.user;

// ---------------------------------------------------------------------------------------------
// Server client (routes.server)
// ---------------------------------------------------------------------------------------------

export interface ServerCredentialOptions extends ClientOptions {
  apiKey: string;
  apiSecret: string;
  /** Lifetime of the minted server tokens; default: no `exp` claim. */
  expiresIn?: string | undefined;
  /** Re-mint and retry once after UNAUTHENTICATED. Default true. */
  reauthenticate?: boolean | undefined;
  token?: never;
}
export interface StaticTokenOptions extends ClientOptions {
  /** A ready-made bearer token (never re-minted). */
  token: string;
  apiKey?: never;
  apiSecret?: never;
}
export type ServerClientOptions = ServerCredentialOptions | StaticTokenOptions;

/**
 * The tenant backend's client (server token). With `{token}` it sends that token as-is — any
 * token, which also lets tests call server-only routes with a user token.
 */
export class ServerClient extends FeedApiClient {
  constructor(options: ServerClientOptions) {
    if (typeof options.token === "string") {
      super(new HttpClient({ ...options, token: options.token }), { validateResponses: validatorOf(options.validateResponses) });
      return;
    }
    const { apiKey, apiSecret, expiresIn } = options;
    const lifetime = expiresIn === undefined ? undefined : parseDuration(expiresIn);
    const minted = new MintedToken(() => createServerToken(apiKey, apiSecret, { expiresIn }), lifetime);
    super(
      new HttpClient({
        ...options,
        token: ({ refresh }) => minted.get(refresh),
        refreshOnUnauthenticated: options.reauthenticate ?? true,
      }),
      { validateResponses: validatorOf(options.validateResponses) },
    );
  }

  // Iterators over paged lists (each follows `next` until the last page)

  /** Every webhook destination. */
  allWebhooks(params?: IterateParams, call?: CallOptions): AsyncGenerator<WebhookDestination, void, undefined> {
    return paginate((next) => this.listWebhooks({ ...params, next }, call));
  }

  /** Every promoted record, retracted ones included. */
  allPromoted(params?: IterateParams, call?: CallOptions): AsyncGenerator<PromotedRecord, void, undefined> {
    return paginate((next) => this.listPromoted({ ...params, next }, call));
  }

  // Users

  /** `PUT /v1/users/{id}` `{custom}` — 201 created / 200 updated. */
  upsertUser(id: string, custom: JsonObject = {}, call?: CallOptions): Promise<User> {
    return this.route(serverRoutes.upsertUser, { params: { id }, body: { custom }, call });
  }

  /** `POST /v1/users/{id}/revoke-tokens` → `{revoked_before}`. */
  revokeTokens(id: string, call?: CallOptions): Promise<RevokeTokensResult> {
    return this.route(serverRoutes.revokeTokens, { params: { id }, call });
  }

  // Batch import (1..100 items; check each result's `ok`)

  /** `POST /v1/batch/users` `{users: [{id, custom}]}` */
  batchUsers(users: UserInput[], call?: CallOptions): Promise<BatchResult> {
    return this.route(serverRoutes.batchUsers, { body: { users }, call });
  }

  /** `POST /v1/batch/objects` `{objects: [{type, id, custom}]}` */
  batchObjects(objects: ObjectInput[], call?: CallOptions): Promise<BatchResult> {
    return this.route(serverRoutes.batchObjects, { body: { objects }, call });
  }

  /** `POST /v1/batch/follows` `{follows: [{source, target}]}` */
  batchFollows(follows: BatchFollowInput[], call?: CallOptions): Promise<BatchResult> {
    return this.route(serverRoutes.batchFollows, { body: { follows }, call });
  }

  /** `POST /v1/batch/activities` `{activities: [{feed, activity}]}` */
  batchActivities(activities: BatchActivityInput[], call?: CallOptions): Promise<BatchResult> {
    return this.route(serverRoutes.batchActivities, { body: { activities }, call });
  }

  // Objects (writes)

  /** `PUT /v1/objects/{type}/{id}` `{custom}` — 201 created / 200 replaced. */
  putObject(type: string, id: string, custom: JsonObject, call?: CallOptions): Promise<FeedObject> {
    return this.route(serverRoutes.putObject, { params: { type, id }, body: { custom }, call });
  }

  /** `PATCH /v1/objects/{type}/{id}` `{set?, unset?}` (paths start with `custom.`). */
  patchObject(type: string, id: string, patch: PatchObjectInput, call?: CallOptions): Promise<FeedObject> {
    return this.route(serverRoutes.patchObject, { params: { type, id }, body: patch, call });
  }

  /** `DELETE /v1/objects/{type}/{id}` (204). */
  deleteObject(type: string, id: string, call?: CallOptions): Promise<void> {
    return this.route(serverRoutes.deleteObject, { params: { type, id }, call });
  }

  /** `POST /v1/objects/bulk` `{objects}` (1..100) → `{results: [Object]}`. */
  bulkObjects(objects: ObjectInput[], call?: CallOptions): Promise<BulkObjectsResult> {
    return this.route(serverRoutes.bulkObjects, { body: { objects }, call });
  }

  // Promoted activities

  /** `POST /v1/promoted` */
  createPromoted(input: CreatePromotedInput, call?: CallOptions): Promise<PromotedRecord> {
    return this.route(serverRoutes.createPromoted, { body: input, call });
  }

  /** `GET /v1/promoted` (includes retracted records, with served_count). */
  listPromoted(params?: PageParams, call?: CallOptions): Promise<Page<PromotedRecord>> {
    return this.route(serverRoutes.listPromoted, { query: pageQuery(params), call });
  }

  /** `DELETE /v1/promoted/{id}` (retract). */
  retractPromoted(id: string, call?: CallOptions): Promise<void> {
    return this.route(serverRoutes.retractPromoted, { params: { id }, call });
  }

  // Webhook destinations

  /** `GET /v1/webhooks` */
  listWebhooks(params?: PageParams, call?: CallOptions): Promise<Page<WebhookDestination>> {
    return this.route(serverRoutes.listWebhooks, { query: pageQuery(params), call });
  }

  /** `POST /v1/webhooks` `{url, events?}` → `{destination, signing_secret}` (secret shown once). */
  createWebhook(input: CreateWebhookInput, call?: CallOptions): Promise<CreatedWebhook> {
    return this.route(serverRoutes.createWebhook, { body: input, call });
  }

  /** `DELETE /v1/webhooks/{id}` (204). */
  deleteWebhook(id: string, call?: CallOptions): Promise<void> {
    return this.route(serverRoutes.deleteWebhook, { params: { id }, call });
  }

  // Moderation

  /** `PUT /v1/moderation/blocklist` `{terms}` (replaces the list) → the list as stored. */
  setBlocklist(terms: string[], call?: CallOptions): Promise<Blocklist> {
    return this.route(serverRoutes.setBlocklist, { body: { terms }, call });
  }

  /** `GET /v1/moderation/blocklist` → the list as stored (NFKC, invisible characters removed, lower-cased, trimmed, sorted). */
  getBlocklist(call?: CallOptions): Promise<Blocklist> {
    return this.route(serverRoutes.getBlocklist, { call });
  }

  // Reaction kinds

  /** `PUT /v1/reactions/kinds` `{kinds}` (replaces the list; empty clears it) → the list as stored. */
  setReactionKinds(kinds: string[], call?: CallOptions): Promise<ReactionKinds> {
    return this.route(serverRoutes.setReactionKinds, { body: { kinds }, call });
  }

  /** `GET /v1/reactions/kinds` → the declared kinds (empty: any kind, within the per-activity bound). */
  getReactionKinds(call?: CallOptions): Promise<ReactionKinds> {
    return this.route(serverRoutes.getReactionKinds, { call });
  }
}

// ---------------------------------------------------------------------------------------------
// User client (routes.user)
// ---------------------------------------------------------------------------------------------

export interface UserCredentialOptions extends ClientOptions {
  apiKey: string;
  apiSecret: string;
  userId: string;
  /** Lifetime of the minted user tokens; default `1h`. */
  expiresIn?: string | undefined;
  /**
   * Re-mint and retry once after UNAUTHENTICATED. Default true. The fresh token is issued at the
   * next whole second (the client waits up to one second), so it outlives a revocation made just
   * before: the server refuses user tokens whose `iat` is earlier than `revoked_before`.
   */
  reauthenticate?: boolean | undefined;
  token?: never;
}
export interface UserTokenOptions extends ClientOptions {
  token: string;
  /** Defaults to the token's `user_id` claim (decoded, not verified). */
  userId?: string | undefined;
  apiKey?: never;
  apiSecret?: never;
}
export type UserClientOptions = UserCredentialOptions | UserTokenOptions;

/** An end-user's client (user token): reads, writes on the user's own feeds, engagement. */
export class UserClient extends FeedApiClient {
  readonly userId: string | undefined;

  constructor(options: UserClientOptions) {
    if (typeof options.token === "string") {
      super(new HttpClient({ ...options, token: options.token }), { validateResponses: validatorOf(options.validateResponses) });
      this.userId = options.userId ?? userIdOf(options.token);
      return;
    }
    const { apiKey, apiSecret, userId } = options;
    const expiresIn = options.expiresIn ?? DEFAULT_USER_TOKEN_EXPIRES_IN;
    // After a 401 the fresh token must be issued after the revocation that may have caused it.
    const minted = new MintedToken(
      (issuedAt) => createUserToken(apiKey, apiSecret, userId, { expiresIn, issuedAt }),
      parseDuration(expiresIn),
      { sleep: options.sleep ?? defaultSleep },
    );
    super(
      new HttpClient({
        ...options,
        token: ({ refresh }) => minted.get(refresh),
        refreshOnUnauthenticated: options.reauthenticate ?? true,
      }),
      { validateResponses: validatorOf(options.validateResponses) },
    );
    this.userId = userId;
  }

  /** `GET /v1/me` — the calling user's record (404 when there is none). */
  me(call?: CallOptions): Promise<User> {
    return this.route(userRoutes.me, { call });
  }
}

function userIdOf(token: string): string | undefined {
  try {
    const claims = decodeJwt(token);
    return typeof claims["user_id"] === "string" ? claims["user_id"] : undefined;
  } catch {
    return undefined;
  }
}
