import { decodeJwt } from "jose";
import { HttpClient, defaultSleep } from "./http.js";
import { createServerToken, createUserToken, parseDuration, DEFAULT_USER_TOKEN_EXPIRES_IN } from "./tokens.js";
import { BaseClient, MintedToken, feedRefString, pageQuery, parseFeedRef, type ClientOptions, type FeedRef } from "./client-base.js";
import { feedApiRoutes as api, serverRoutes, userRoutes } from "@feeds/contract";
import type {
  Activity,
  AddActivityInput,
  AddCommentInput,
  AddedActivity,
  BatchActivityInput,
  BatchFollowInput,
  BatchResult,
  Blocklist,
  BulkObjectsResult,
  CreatedWebhook,
  CreatePromotedInput,
  CreateWebhookInput,
  FeedObject,
  FeedPage,
  FeedSignal,
  Follow,
  FollowStats,
  JsonObject,
  MarkNotificationsInput,
  NotificationCounts,
  NotificationPage,
  NotificationSignal,
  ObjectInput,
  ObjectsByRef,
  Page,
  PageParams,
  PatchActivityInput,
  PatchObjectInput,
  PromotedRecord,
  Reaction,
  ReactionKinds,
  Reply,
  RevokeTokensResult,
  SignalResult,
  Suggestions,
  User,
  UserInput,
  WebhookDestination,
} from "@feeds/contract";

export { paginate, parseFeedRef, feedRefString, BaseClient, type ClientOptions, type FeedRef, type RouteInput } from "./client-base.js";

/** `{group, id, target_group, target_id}` of an unfollow. */
function edgeParams(feed: FeedRef, target: FeedRef) {
  const t = parseFeedRef(target);
  return { ...parseFeedRef(feed), target_group: t.group, target_id: t.id };
}

// ---------------------------------------------------------------------------------------------
// Feed API routes open to server and user tokens (routes.feedApi)
// ---------------------------------------------------------------------------------------------

export abstract class FeedApiClient extends BaseClient {
  // Feeds and activities

  /** `GET /v1/feeds/{group}/{id}` */
  readFeed(feed: FeedRef, params?: PageParams): Promise<FeedPage> {
    return this.route(api.readFeed, { params: parseFeedRef(feed), query: pageQuery(params) });
  }

  /** `POST /v1/feeds/{group}/{id}/activities` (201; a live duplicate answers the existing one). */
  addActivity(feed: FeedRef, activity: AddActivityInput): Promise<AddedActivity> {
    return this.route(api.addActivity, { params: parseFeedRef(feed), body: activity });
  }

  /** `GET /v1/activities/{id}` */
  getActivity(id: string): Promise<Activity> {
    return this.route(api.getActivity, { params: { id } });
  }

  /** `PATCH /v1/activities/{id}` with `{set?, unset?, refs?}` (paths start with `custom.`). */
  patchActivity(id: string, patch: PatchActivityInput): Promise<Activity> {
    return this.route(api.patchActivity, { params: { id }, body: patch });
  }

  /** `DELETE /v1/activities/{id}` (soft delete, 204). */
  deleteActivity(id: string): Promise<void> {
    return this.route(api.deleteActivity, { params: { id } });
  }

  /** `POST /v1/feeds/{group}/{id}/follows` — 201 new edge, 200 existing edge. */
  follow(feed: FeedRef, target: FeedRef, options: { activity_copy_limit?: number } = {}): Promise<Follow> {
    const body: JsonObject = { target: feedRefString(target) };
    if (options.activity_copy_limit !== undefined) body["activity_copy_limit"] = options.activity_copy_limit;
    return this.route(api.follow, { params: parseFeedRef(feed), body });
  }

  /** `DELETE /v1/feeds/{group}/{id}/follows/{target_group}/{target_id}?keep_history=` (204). */
  unfollow(feed: FeedRef, target: FeedRef, options: { keep_history?: boolean } = {}): Promise<void> {
    return this.route(api.unfollow, { params: edgeParams(feed, target), query: { keep_history: options.keep_history } });
  }

  /** `GET /v1/feeds/{group}/{id}/follows` — who this feed follows. */
  follows(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.route(api.follows, { params: parseFeedRef(feed), query: pageQuery(params) });
  }

  /** `GET /v1/feeds/{group}/{id}/followers` */
  followers(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.route(api.followers, { params: parseFeedRef(feed), query: pageQuery(params) });
  }

  /** `GET /v1/feeds/{group}/{id}/stats` */
  stats(feed: FeedRef): Promise<FollowStats> {
    return this.route(api.stats, { params: parseFeedRef(feed) });
  }

  /** `GET /v1/feeds/{group}/{id}/suggestions?limit=` (1..50, default 25; not paged). */
  suggestions(feed: FeedRef, params: { limit?: number } = {}): Promise<Suggestions> {
    return this.route(api.suggestions, { params: parseFeedRef(feed), query: { limit: params.limit } });
  }

  /** `GET /v1/feeds/{group}/{id}/signal`, conditional on `etag`. */
  feedSignal(feed: FeedRef, options: { etag?: string } = {}): Promise<SignalResult<FeedSignal>> {
    return this.signalOf(api.feedSignal, { params: parseFeedRef(feed) }, options.etag);
  }

  // Reactions

  /** `POST /v1/activities/{id}/reactions` — server tokens must pass `user_id`. */
  react(activityId: string, kind: string, options: { user_id?: string } = {}): Promise<Reaction> {
    const body: JsonObject = { kind };
    if (options.user_id !== undefined) body["user_id"] = options.user_id;
    return this.route(api.react, { params: { id: activityId }, body });
  }

  /** `GET /v1/activities/{id}/reactions?kind=` (newest first). */
  reactions(activityId: string, params: PageParams & { kind?: string } = {}): Promise<Page<Reaction>> {
    return this.route(api.reactions, { params: { id: activityId }, query: { ...pageQuery(params), kind: params.kind } });
  }

  /** `DELETE /v1/activities/{id}/reactions/{kind}` (`user_id` for server tokens). */
  unreact(activityId: string, kind: string, options: { user_id?: string } = {}): Promise<void> {
    return this.route(api.unreact, { params: { id: activityId, kind }, query: { user_id: options.user_id } });
  }

  /** `DELETE /v1/reactions/{id}` (compatibility route). */
  deleteReaction(reactionId: string): Promise<void> {
    return this.route(api.deleteReaction, { params: { id: reactionId } });
  }

  // Comments

  /** `POST /v1/activities/{id}/comments` `{text, parent_id?, user_id?}` — a reply when parent_id is set. */
  addComment(activityId: string, input: AddCommentInput): Promise<Reply> {
    return this.route(api.addComment, { params: { id: activityId }, body: input });
  }

  /** `GET /v1/activities/{id}/comments` — top-level comments, oldest first. */
  comments(activityId: string, params?: PageParams): Promise<Page<Reply>> {
    return this.route(api.comments, { params: { id: activityId }, query: pageQuery(params) });
  }

  /** `GET /v1/comments/{id}/replies` — oldest first. */
  replies(commentId: string, params?: PageParams): Promise<Page<Reply>> {
    return this.route(api.replies, { params: { id: commentId }, query: pageQuery(params) });
  }

  /** `PATCH /v1/comments/{id}` `{text, user_id?}` — the author only; server tokens pass the author's `user_id`. */
  editComment(commentId: string, text: string, options: { user_id?: string } = {}): Promise<Reply> {
    const body: JsonObject = { text };
    if (options.user_id !== undefined) body["user_id"] = options.user_id;
    return this.route(api.editComment, { params: { id: commentId }, body });
  }

  /** `DELETE /v1/comments/{id}` (204) — the author only (`user_id` for server tokens); replies go with their comment. */
  deleteComment(commentId: string, options: { user_id?: string } = {}): Promise<void> {
    return this.route(api.deleteComment, { params: { id: commentId }, query: { user_id: options.user_id } });
  }

  // Notifications

  /** `GET /v1/notifications` — `owner` for server tokens. */
  notifications(params: PageParams & { owner?: string } = {}): Promise<NotificationPage> {
    return this.route(api.notifications, { query: { ...pageQuery(params), owner: params.owner } });
  }

  /** `POST /v1/notifications/mark` `{seen?, read?, owner?}` → `{unseen, unread}`. */
  markNotifications(input: MarkNotificationsInput): Promise<NotificationCounts> {
    return this.route(api.markNotifications, { body: input });
  }

  /** `GET /v1/notifications/signal`, conditional on `etag` (`owner` for server tokens). */
  notificationSignal(options: { owner?: string; etag?: string } = {}): Promise<SignalResult<NotificationSignal>> {
    return this.signalOf(api.notificationSignal, { query: { owner: options.owner } }, options.etag);
  }

  // Objects (reads are open to any token)

  /** `GET /v1/objects/{type}/{id}` */
  getObject(type: string, id: string): Promise<FeedObject> {
    return this.route(api.getObject, { params: { type, id } });
  }

  /** `GET /v1/objects?refs=a:1,b:2` (at most 100 refs) → `{objects: {ref: Object}}`. */
  getObjects(refs: readonly string[]): Promise<ObjectsByRef> {
    return this.route(api.getObjects, { query: { refs: refs.join(",") } });
  }

  // Users

  /** `GET /v1/users/{id}` */
  getUser(id: string): Promise<User> {
    return this.route(api.getUser, { params: { id } });
  }
}

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
      super(new HttpClient({ ...options, token: options.token }), options);
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
      options,
    );
  }

  // Users

  /** `PUT /v1/users/{id}` `{custom}` — 201 created / 200 updated. */
  upsertUser(id: string, custom: JsonObject = {}): Promise<User> {
    return this.route(serverRoutes.upsertUser, { params: { id }, body: { custom } });
  }

  /** `POST /v1/users/{id}/revoke-tokens` → `{revoked_before}`. */
  revokeTokens(id: string): Promise<RevokeTokensResult> {
    return this.route(serverRoutes.revokeTokens, { params: { id } });
  }

  // Batch import (1..100 items; check each result's `ok`)

  /** `POST /v1/batch/users` `{users: [{id, custom}]}` */
  batchUsers(users: UserInput[]): Promise<BatchResult> {
    return this.route(serverRoutes.batchUsers, { body: { users } });
  }

  /** `POST /v1/batch/objects` `{objects: [{type, id, custom}]}` */
  batchObjects(objects: ObjectInput[]): Promise<BatchResult> {
    return this.route(serverRoutes.batchObjects, { body: { objects } });
  }

  /** `POST /v1/batch/follows` `{follows: [{source, target}]}` */
  batchFollows(follows: BatchFollowInput[]): Promise<BatchResult> {
    return this.route(serverRoutes.batchFollows, { body: { follows } });
  }

  /** `POST /v1/batch/activities` `{activities: [{feed, activity}]}` */
  batchActivities(activities: BatchActivityInput[]): Promise<BatchResult> {
    return this.route(serverRoutes.batchActivities, { body: { activities } });
  }

  // Objects (writes)

  /** `PUT /v1/objects/{type}/{id}` `{custom}` — 201 created / 200 replaced. */
  putObject(type: string, id: string, custom: JsonObject): Promise<FeedObject> {
    return this.route(serverRoutes.putObject, { params: { type, id }, body: { custom } });
  }

  /** `PATCH /v1/objects/{type}/{id}` `{set?, unset?}` (paths start with `custom.`). */
  patchObject(type: string, id: string, patch: PatchObjectInput): Promise<FeedObject> {
    return this.route(serverRoutes.patchObject, { params: { type, id }, body: patch });
  }

  /** `DELETE /v1/objects/{type}/{id}` (204). */
  deleteObject(type: string, id: string): Promise<void> {
    return this.route(serverRoutes.deleteObject, { params: { type, id } });
  }

  /** `POST /v1/objects/bulk` `{objects}` (1..100) → `{results: [Object]}`. */
  bulkObjects(objects: ObjectInput[]): Promise<BulkObjectsResult> {
    return this.route(serverRoutes.bulkObjects, { body: { objects } });
  }

  // Promoted activities

  /** `POST /v1/promoted` */
  createPromoted(input: CreatePromotedInput): Promise<PromotedRecord> {
    return this.route(serverRoutes.createPromoted, { body: input });
  }

  /** `GET /v1/promoted` (includes retracted records, with served_count). */
  listPromoted(params?: PageParams): Promise<Page<PromotedRecord>> {
    return this.route(serverRoutes.listPromoted, { query: pageQuery(params) });
  }

  /** `DELETE /v1/promoted/{id}` (retract). */
  retractPromoted(id: string): Promise<void> {
    return this.route(serverRoutes.retractPromoted, { params: { id } });
  }

  // Webhook destinations

  /** `GET /v1/webhooks` */
  listWebhooks(params?: PageParams): Promise<Page<WebhookDestination>> {
    return this.route(serverRoutes.listWebhooks, { query: pageQuery(params) });
  }

  /** `POST /v1/webhooks` `{url, events?}` → `{destination, signing_secret}` (secret shown once). */
  createWebhook(input: CreateWebhookInput): Promise<CreatedWebhook> {
    return this.route(serverRoutes.createWebhook, { body: input });
  }

  /** `DELETE /v1/webhooks/{id}` (204). */
  deleteWebhook(id: string): Promise<void> {
    return this.route(serverRoutes.deleteWebhook, { params: { id } });
  }

  // Moderation

  /** `PUT /v1/moderation/blocklist` `{terms}` (replaces the list) → the list as stored. */
  setBlocklist(terms: string[]): Promise<Blocklist> {
    return this.route(serverRoutes.setBlocklist, { body: { terms } });
  }

  /** `GET /v1/moderation/blocklist` → the list as stored (NFKC, invisible characters removed, lower-cased, trimmed, sorted). */
  getBlocklist(): Promise<Blocklist> {
    return this.route(serverRoutes.getBlocklist);
  }

  // Reaction kinds

  /** `PUT /v1/reactions/kinds` `{kinds}` (replaces the list; empty clears it) → the list as stored. */
  setReactionKinds(kinds: string[]): Promise<ReactionKinds> {
    return this.route(serverRoutes.setReactionKinds, { body: { kinds } });
  }

  /** `GET /v1/reactions/kinds` → the declared kinds (empty: any kind, within the per-activity bound). */
  getReactionKinds(): Promise<ReactionKinds> {
    return this.route(serverRoutes.getReactionKinds);
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
      super(new HttpClient({ ...options, token: options.token }), options);
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
      options,
    );
    this.userId = userId;
  }

  /** `GET /v1/me` — the calling user's record (404 when there is none). */
  me(): Promise<User> {
    return this.route(userRoutes.me);
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
