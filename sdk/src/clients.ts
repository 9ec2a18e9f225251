import { decodeJwt } from "jose";
import {
  HttpClient,
  defaultSleep,
  type CallSpec,
  type HttpOptions,
  type Query,
  type RawResponse,
  type RequestSpec,
} from "./http.js";
import { createServerToken, createUserToken, parseDuration, DEFAULT_USER_TOKEN_EXPIRES_IN } from "./tokens.js";
import type {
  Activity,
  AddActivityInput,
  AddCommentInput,
  AdminQueues,
  BatchActivityInput,
  BatchFollowInput,
  BatchResult,
  Blocklist,
  BulkObjectsResult,
  CreatedTenant,
  CreatedWebhook,
  CreatePromotedInput,
  CreateTenantInput,
  CreateWebhookInput,
  FeedObject,
  FeedPage,
  FeedSignal,
  Follow,
  FollowStats,
  Health,
  InspectorActivity,
  InviteInput,
  InviteResult,
  JsonObject,
  MarkNotificationsInput,
  NotificationCounts,
  NotificationPage,
  NotificationSignal,
  ObjectInput,
  ObjectsByRef,
  Operator,
  OperatorSession,
  OperatorSignal,
  Page,
  PageParams,
  PatchActivityInput,
  PatchObjectInput,
  PromotedRecord,
  QueueDepth,
  QueueName,
  Reaction,
  Readiness,
  Reply,
  RevokeTokensResult,
  SecretResult,
  SignalResult,
  Suggestions,
  Teammate,
  TeamRole,
  Tenant,
  TestWebhookResult,
  User,
  UserInput,
  UserListItem,
  WebhookDestination,
  WebhookEventRecord,
} from "./types.js";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** A feed: `"group:id"` or `{group, id}`. */
export type FeedRef = string | { group: string; id: string };

/** Splits a feed ref at its first colon. Throws a TypeError when it is not `group:id`. */
export function parseFeedRef(feed: FeedRef): { group: string; id: string } {
  if (typeof feed !== "string") {
    if (typeof feed?.group !== "string" || typeof feed.id !== "string" || !feed.group || !feed.id) {
      throw new TypeError("feed must be \"group:id\" or {group, id} with non-empty strings");
    }
    return { group: feed.group, id: feed.id };
  }
  const i = feed.indexOf(":");
  if (i <= 0 || i === feed.length - 1) {
    throw new TypeError(`feed ref "${feed}" must have the form "group:id"`);
  }
  return { group: feed.slice(0, i), id: feed.slice(i + 1) };
}

/** `"group:id"` of a feed ref. */
export function feedRefString(feed: FeedRef): string {
  const { group, id } = parseFeedRef(feed);
  return `${group}:${id}`;
}

/** Builds a path whose interpolated values are URL-encoded path segments. */
function p(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  let out = strings[0] ?? "";
  values.forEach((v, i) => {
    out += encodeURIComponent(String(v)) + (strings[i + 1] ?? "");
  });
  return out;
}

function feedPath(prefix: string, feed: FeedRef): string {
  const { group, id } = parseFeedRef(feed);
  return `${prefix}/${encodeURIComponent(group)}/${encodeURIComponent(id)}`;
}

function pageQuery(params: PageParams | undefined): Query {
  return { limit: params?.limit, next: params?.next ?? undefined, cursor: params?.cursor };
}

/**
 * Iterates every item of a paged list: `for await (const a of paginate((next) =>
 * client.readFeed("user:1", { next })))`.
 */
export async function* paginate<T>(
  fetchPage: (next: string | undefined) => Promise<Page<T>>,
): AsyncGenerator<T, void, undefined> {
  let next: string | undefined;
  for (;;) {
    const page = await fetchPage(next);
    yield* page.results;
    if (page.next === null || page.next === undefined || page.next === "") return;
    next = page.next;
  }
}

/**
 * Caches a minted token; re-mints when it is close to expiry or when asked to.
 *
 * With `laterIatOnRefresh`, a forced re-mint (the server refused the token) first waits for the
 * next whole second and uses it as `iat`: token revocation compares the second-precision `iat`
 * with `revoked_before` (millisecond precision), so a token minted in the same second as the
 * revocation would be refused again. Waiting (at most one second, through the client's `sleep`)
 * keeps `iat` honest (never in the future) and later than any revocation the server had already
 * applied when it refused the old token, as long as the two clocks agree.
 */
class MintedToken {
  private token: string | undefined;
  private refreshAtMs = 0;

  constructor(
    private readonly mint: (issuedAtSeconds: number | undefined) => Promise<string>,
    private readonly lifetimeSeconds: number | undefined,
    private readonly laterIatOnRefresh?: { sleep: (ms: number) => Promise<void> },
  ) {}

  async get(forceRefresh: boolean): Promise<string> {
    if (!forceRefresh && this.token !== undefined && Date.now() < this.refreshAtMs) {
      return this.token;
    }
    let issuedAt: number | undefined;
    if (forceRefresh && this.laterIatOnRefresh) {
      const now = Date.now();
      issuedAt = Math.ceil(now / 1000);
      const waitMs = issuedAt * 1000 - now;
      if (waitMs > 0) await this.laterIatOnRefresh.sleep(waitMs);
    }
    const mintedAt = Date.now();
    const token = await this.mint(issuedAt);
    this.token = token;
    if (this.lifetimeSeconds === undefined) {
      this.refreshAtMs = Number.POSITIVE_INFINITY;
    } else {
      const marginSeconds = Math.min(60, this.lifetimeSeconds * 0.2);
      this.refreshAtMs = mintedAt + (this.lifetimeSeconds - marginSeconds) * 1000;
    }
    return token;
  }
}

export interface ClientOptions extends HttpOptions {
  /** e.g. `http://127.0.0.1:8080` (no trailing `/v1`). */
  baseUrl: string;
}

// ---------------------------------------------------------------------------------------------
// Base: raw access and the unauthenticated health routes
// ---------------------------------------------------------------------------------------------

export abstract class BaseClient {
  protected readonly http: HttpClient;

  protected constructor(http: HttpClient) {
    this.http = http;
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** The bearer token this client would send now (minting one if needed). */
  async getToken(): Promise<string | undefined> {
    return this.http.token(false);
  }

  /**
   * Escape hatch: one request with this client's credentials (unless `auth` says otherwise),
   * no retry, never throws for an HTTP answer. Resolves `{status, ok, headers, body, text, url}`.
   */
  raw<T = unknown>(spec: RequestSpec): Promise<RawResponse<T>> {
    return this.http.raw<T>(spec);
  }

  /** Alias of `raw()`. */
  request<T = unknown>(spec: RequestSpec): Promise<RawResponse<T>> {
    return this.http.raw<T>(spec);
  }

  /** Any route with the usual behaviour (throws FeedsApiError, retry policy). */
  call<T = unknown>(spec: CallSpec): Promise<T> {
    return this.http.call<T>(spec);
  }

  protected get<T>(path: string, query?: Query): Promise<T> {
    return this.http.call<T>({ method: "GET", path, query });
  }
  protected post<T>(path: string, body?: unknown, query?: Query): Promise<T> {
    return this.http.call<T>({ method: "POST", path, body, query });
  }
  protected put<T>(path: string, body?: unknown): Promise<T> {
    return this.http.call<T>({ method: "PUT", path, body });
  }
  protected patch<T>(path: string, body?: unknown): Promise<T> {
    return this.http.call<T>({ method: "PATCH", path, body });
  }
  protected async del(path: string, query?: Query): Promise<void> {
    await this.http.call<unknown>({ method: "DELETE", path, query });
  }

  /** Conditional GET of a change signal: `etag` goes out as If-None-Match; 304 → notModified. */
  protected async conditionalGet<T>(path: string, query: Query, etag?: string): Promise<SignalResult<T>> {
    const res = await this.http.send<T>({
      method: "GET",
      path,
      query,
      headers: { "if-none-match": etag },
    });
    const tag = res.headers.get("etag");
    if (res.status === 304) return { notModified: true, etag: tag ?? etag ?? null };
    return { notModified: false, etag: tag, body: res.body };
  }

  // Health and monitoring (unauthenticated; no token is sent).

  /** `GET /v1/health` */
  health(): Promise<Health> {
    return this.http.call<Health>({ method: "GET", path: "/v1/health", auth: false });
  }

  /**
   * `GET /v1/health/ready`. Resolves with the body for 200 AND for 503 (not ready, no retry):
   * check `checks[].ok`. Use `raw()` to see the HTTP status.
   */
  ready(): Promise<Readiness> {
    return this.http.call<Readiness>({
      method: "GET",
      path: "/v1/health/ready",
      auth: false,
      okStatuses: [503],
    });
  }

  /** `GET /v1/health/queues/{fanout|notify|webhooks}` */
  queueDepth(queue: QueueName): Promise<QueueDepth> {
    return this.http.call<QueueDepth>({ method: "GET", path: p`/v1/health/queues/${queue}`, auth: false });
  }
}

// ---------------------------------------------------------------------------------------------
// Feed API routes open to server and user tokens
// ---------------------------------------------------------------------------------------------

export abstract class FeedApiClient extends BaseClient {
  // Feeds and activities

  /** `GET /v1/feeds/{group}/{id}` */
  readFeed(feed: FeedRef, params?: PageParams): Promise<FeedPage> {
    return this.get(feedPath("/v1/feeds", feed), pageQuery(params));
  }

  /** `POST /v1/feeds/{group}/{id}/activities` (201; a live duplicate answers the existing one). */
  addActivity(feed: FeedRef, activity: AddActivityInput): Promise<Activity> {
    return this.post(`${feedPath("/v1/feeds", feed)}/activities`, activity);
  }

  /** `GET /v1/activities/{id}` */
  getActivity(id: string): Promise<Activity> {
    return this.get(p`/v1/activities/${id}`);
  }

  /** `PATCH /v1/activities/{id}` with `{set?, unset?, refs?}` (paths start with `custom.`). */
  patchActivity(id: string, patch: PatchActivityInput): Promise<Activity> {
    return this.patch(p`/v1/activities/${id}`, patch);
  }

  /** `DELETE /v1/activities/{id}` (soft delete, 204). */
  deleteActivity(id: string): Promise<void> {
    return this.del(p`/v1/activities/${id}`);
  }

  /** `POST /v1/feeds/{group}/{id}/follows` — 201 new edge, 200 existing edge. */
  follow(feed: FeedRef, target: FeedRef, options: { activity_copy_limit?: number } = {}): Promise<Follow> {
    const body: JsonObject = { target: feedRefString(target) };
    if (options.activity_copy_limit !== undefined) body["activity_copy_limit"] = options.activity_copy_limit;
    return this.post(`${feedPath("/v1/feeds", feed)}/follows`, body);
  }

  /** `DELETE /v1/feeds/{group}/{id}/follows/{target_group}/{target_id}?keep_history=` (204). */
  unfollow(feed: FeedRef, target: FeedRef, options: { keep_history?: boolean } = {}): Promise<void> {
    const t = parseFeedRef(target);
    return this.del(`${feedPath("/v1/feeds", feed)}${p`/follows/${t.group}/${t.id}`}`, {
      keep_history: options.keep_history,
    });
  }

  /** `GET /v1/feeds/{group}/{id}/follows` — who this feed follows. */
  follows(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.get(`${feedPath("/v1/feeds", feed)}/follows`, pageQuery(params));
  }

  /** `GET /v1/feeds/{group}/{id}/followers` */
  followers(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.get(`${feedPath("/v1/feeds", feed)}/followers`, pageQuery(params));
  }

  /** `GET /v1/feeds/{group}/{id}/stats` */
  stats(feed: FeedRef): Promise<FollowStats> {
    return this.get(`${feedPath("/v1/feeds", feed)}/stats`);
  }

  /** `GET /v1/feeds/{group}/{id}/suggestions?limit=` (1..50, default 25; not paged). */
  suggestions(feed: FeedRef, params: { limit?: number } = {}): Promise<Suggestions> {
    return this.get(`${feedPath("/v1/feeds", feed)}/suggestions`, { limit: params.limit });
  }

  /** `GET /v1/feeds/{group}/{id}/signal`, conditional on `etag`. */
  feedSignal(feed: FeedRef, options: { etag?: string } = {}): Promise<SignalResult<FeedSignal>> {
    return this.conditionalGet(`${feedPath("/v1/feeds", feed)}/signal`, {}, options.etag);
  }

  // Reactions

  /** `POST /v1/activities/{id}/reactions` — server tokens must pass `user_id`. */
  react(activityId: string, kind: string, options: { user_id?: string } = {}): Promise<Reaction> {
    const body: JsonObject = { kind };
    if (options.user_id !== undefined) body["user_id"] = options.user_id;
    return this.post(p`/v1/activities/${activityId}/reactions`, body);
  }

  /** `GET /v1/activities/{id}/reactions?kind=` (newest first). */
  reactions(activityId: string, params: PageParams & { kind?: string } = {}): Promise<Page<Reaction>> {
    return this.get(p`/v1/activities/${activityId}/reactions`, { ...pageQuery(params), kind: params.kind });
  }

  /** `DELETE /v1/activities/{id}/reactions/{kind}` (`user_id` for server tokens). */
  unreact(activityId: string, kind: string, options: { user_id?: string } = {}): Promise<void> {
    return this.del(p`/v1/activities/${activityId}/reactions/${kind}`, { user_id: options.user_id });
  }

  /** `DELETE /v1/reactions/{id}` (compatibility route). */
  deleteReaction(reactionId: string): Promise<void> {
    return this.del(p`/v1/reactions/${reactionId}`);
  }

  // Comments

  /** `POST /v1/activities/{id}/comments` `{text, parent_id?, user_id?}` — a reply when parent_id is set. */
  addComment(activityId: string, input: AddCommentInput): Promise<Reply> {
    return this.post(p`/v1/activities/${activityId}/comments`, input);
  }

  /** `GET /v1/activities/{id}/comments` — top-level comments, oldest first. */
  comments(activityId: string, params?: PageParams): Promise<Page<Reply>> {
    return this.get(p`/v1/activities/${activityId}/comments`, pageQuery(params));
  }

  /** `GET /v1/comments/{id}/replies` — oldest first. */
  replies(commentId: string, params?: PageParams): Promise<Page<Reply>> {
    return this.get(p`/v1/comments/${commentId}/replies`, pageQuery(params));
  }

  /** `PATCH /v1/comments/{id}` `{text, user_id?}` — the author only; server tokens pass the author's `user_id`. */
  editComment(commentId: string, text: string, options: { user_id?: string } = {}): Promise<Reply> {
    const body: JsonObject = { text };
    if (options.user_id !== undefined) body["user_id"] = options.user_id;
    return this.patch(p`/v1/comments/${commentId}`, body);
  }

  /** `DELETE /v1/comments/{id}` (204) — the author only (`user_id` for server tokens); replies go with their comment. */
  deleteComment(commentId: string, options: { user_id?: string } = {}): Promise<void> {
    return this.del(p`/v1/comments/${commentId}`, { user_id: options.user_id });
  }

  // Notifications

  /** `GET /v1/notifications` — `owner` for server tokens. */
  notifications(params: PageParams & { owner?: string } = {}): Promise<NotificationPage> {
    return this.get("/v1/notifications", { ...pageQuery(params), owner: params.owner });
  }

  /** `POST /v1/notifications/mark` `{seen?, read?, owner?}` → `{unseen, unread}`. */
  markNotifications(input: MarkNotificationsInput): Promise<NotificationCounts> {
    return this.post("/v1/notifications/mark", input);
  }

  /** `GET /v1/notifications/signal`, conditional on `etag` (`owner` for server tokens). */
  notificationSignal(
    options: { owner?: string; etag?: string } = {},
  ): Promise<SignalResult<NotificationSignal>> {
    return this.conditionalGet("/v1/notifications/signal", { owner: options.owner }, options.etag);
  }

  // Objects (reads are open to any token)

  /** `GET /v1/objects/{type}/{id}` */
  getObject(type: string, id: string): Promise<FeedObject> {
    return this.get(p`/v1/objects/${type}/${id}`);
  }

  /** `GET /v1/objects?refs=a:1,b:2` (at most 100 refs) → `{objects: {ref: Object}}`. */
  getObjects(refs: readonly string[]): Promise<ObjectsByRef> {
    return this.get("/v1/objects", { refs: refs.join(",") });
  }

  // Users

  /** `GET /v1/users/{id}` */
  getUser(id: string): Promise<User> {
    return this.get(p`/v1/users/${id}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Server client
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
      super(new HttpClient({ ...options, token: options.token }));
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
    );
  }

  // Users

  /** `PUT /v1/users/{id}` `{custom}` — 201 created / 200 updated. */
  upsertUser(id: string, custom: JsonObject = {}): Promise<User> {
    return this.put(p`/v1/users/${id}`, { custom });
  }

  /** `POST /v1/users/{id}/revoke-tokens` → `{revoked_before}`. */
  revokeTokens(id: string): Promise<RevokeTokensResult> {
    return this.post(p`/v1/users/${id}/revoke-tokens`);
  }

  // Batch import (1..100 items; check each result's `ok`)

  /** `POST /v1/batch/users` `{users: [{id, custom}]}` */
  batchUsers(users: UserInput[]): Promise<BatchResult> {
    return this.post("/v1/batch/users", { users });
  }

  /** `POST /v1/batch/objects` `{objects: [{type, id, custom}]}` */
  batchObjects(objects: ObjectInput[]): Promise<BatchResult> {
    return this.post("/v1/batch/objects", { objects });
  }

  /** `POST /v1/batch/follows` `{follows: [{source, target}]}` */
  batchFollows(follows: BatchFollowInput[]): Promise<BatchResult> {
    return this.post("/v1/batch/follows", { follows });
  }

  /** `POST /v1/batch/activities` `{activities: [{feed, activity}]}` */
  batchActivities(activities: BatchActivityInput[]): Promise<BatchResult> {
    return this.post("/v1/batch/activities", { activities });
  }

  // Objects (writes)

  /** `PUT /v1/objects/{type}/{id}` `{custom}` — 201 created / 200 replaced. */
  putObject(type: string, id: string, custom: JsonObject): Promise<FeedObject> {
    return this.put(p`/v1/objects/${type}/${id}`, { custom });
  }

  /** `PATCH /v1/objects/{type}/{id}` `{set?, unset?}` (paths start with `custom.`). */
  patchObject(type: string, id: string, patch: PatchObjectInput): Promise<FeedObject> {
    return this.patch(p`/v1/objects/${type}/${id}`, patch);
  }

  /** `DELETE /v1/objects/{type}/{id}` (204). */
  deleteObject(type: string, id: string): Promise<void> {
    return this.del(p`/v1/objects/${type}/${id}`);
  }

  /** `POST /v1/objects/bulk` `{objects}` (1..100) → `{results: [Object]}`. */
  bulkObjects(objects: ObjectInput[]): Promise<BulkObjectsResult> {
    return this.post("/v1/objects/bulk", { objects });
  }

  // Promoted activities

  /** `POST /v1/promoted` */
  createPromoted(input: CreatePromotedInput): Promise<PromotedRecord> {
    return this.post("/v1/promoted", input);
  }

  /** `GET /v1/promoted` (includes retracted records, with served_count). */
  listPromoted(params?: PageParams): Promise<Page<PromotedRecord>> {
    return this.get("/v1/promoted", pageQuery(params));
  }

  /** `DELETE /v1/promoted/{id}` (retract). */
  retractPromoted(id: string): Promise<void> {
    return this.del(p`/v1/promoted/${id}`);
  }

  // Webhook destinations

  /** `GET /v1/webhooks` */
  listWebhooks(params?: PageParams): Promise<Page<WebhookDestination>> {
    return this.get("/v1/webhooks", pageQuery(params));
  }

  /** `POST /v1/webhooks` `{url, events?}` → `{destination, signing_secret}` (secret shown once). */
  createWebhook(input: CreateWebhookInput): Promise<CreatedWebhook> {
    return this.post("/v1/webhooks", input);
  }

  /** `DELETE /v1/webhooks/{id}` (204). */
  deleteWebhook(id: string): Promise<void> {
    return this.del(p`/v1/webhooks/${id}`);
  }

  // Moderation

  /** `PUT /v1/moderation/blocklist` `{terms}` (replaces the list) → the list as stored. */
  setBlocklist(terms: string[]): Promise<Blocklist> {
    return this.put("/v1/moderation/blocklist", { terms });
  }

  /** `GET /v1/moderation/blocklist` → the list as stored (trimmed, lower-cased, sorted). */
  getBlocklist(): Promise<Blocklist> {
    return this.get("/v1/moderation/blocklist");
  }
}

// ---------------------------------------------------------------------------------------------
// User client
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
      super(new HttpClient({ ...options, token: options.token }));
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
    );
    this.userId = userId;
  }

  /** `GET /v1/me` — the calling user's record (404 when there is none). */
  me(): Promise<User> {
    return this.get("/v1/me");
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

// ---------------------------------------------------------------------------------------------
// Operator client (operator console and platform admin)
// ---------------------------------------------------------------------------------------------

export interface OperatorClientOptions extends ClientOptions {
  /** An existing operator session token; otherwise call `login()` or `acceptInvite()`. */
  token?: string | undefined;
}

export class OperatorClient extends BaseClient {
  private sessionToken: string | undefined;

  constructor(options: OperatorClientOptions) {
    super(new HttpClient({ ...options, token: undefined }));
    this.sessionToken = options.token;
    this.http.setToken(() => this.sessionToken);
  }

  /** The current session token (undefined before login / after logout). */
  get token(): string | undefined {
    return this.sessionToken;
  }

  setToken(token: string | undefined): void {
    this.sessionToken = token;
  }

  // Session

  /** `POST /operator/login`; stores the session token. */
  async login(email: string, password: string): Promise<OperatorSession> {
    const session = await this.http.call<OperatorSession>({
      method: "POST",
      path: "/operator/login",
      body: { email, password },
      auth: false,
    });
    this.sessionToken = session.token;
    return session;
  }

  /** `POST /operator/invite/accept`; stores the session token. */
  async acceptInvite(token: string, password: string): Promise<OperatorSession> {
    const session = await this.http.call<OperatorSession>({
      method: "POST",
      path: "/operator/invite/accept",
      body: { token, password },
      auth: false,
    });
    this.sessionToken = session.token;
    return session;
  }

  /** `POST /operator/logout` (204); forgets the session token. */
  async logout(): Promise<void> {
    try {
      await this.post<unknown>("/operator/logout");
    } finally {
      this.sessionToken = undefined;
    }
  }

  /** `GET /operator/me` */
  me(): Promise<Operator> {
    return this.get("/operator/me");
  }

  // Tenant and team

  /** `GET /operator/tenant` */
  tenant(): Promise<Tenant> {
    return this.get("/operator/tenant");
  }

  /** `POST /operator/tenant/rotate-secret` (owner) → `{api_secret}`. */
  rotateSecret(): Promise<SecretResult> {
    return this.post("/operator/tenant/rotate-secret");
  }

  /** `GET /operator/team` */
  team(params?: PageParams): Promise<Page<Teammate>> {
    return this.get("/operator/team", pageQuery(params));
  }

  /** `POST /operator/team/invite` (owner) → `{teammate, invite_token, expires_at}`. */
  invite(input: InviteInput): Promise<InviteResult> {
    return this.post("/operator/team/invite", input);
  }

  /** `PATCH /operator/team/{id}` `{role}` (owner). */
  changeRole(id: string, role: TeamRole): Promise<Teammate> {
    return this.patch(p`/operator/team/${id}`, { role });
  }

  /** `POST /operator/team/{id}/disable` (owner). */
  disable(id: string): Promise<Teammate> {
    return this.post(p`/operator/team/${id}/disable`);
  }

  /** `POST /operator/team/{id}/enable` (owner). */
  enable(id: string): Promise<Teammate> {
    return this.post(p`/operator/team/${id}/enable`);
  }

  // Inspector

  /** `GET /operator/inspect/users` */
  inspectUsers(params?: PageParams): Promise<Page<UserListItem>> {
    return this.get("/operator/inspect/users", pageQuery(params));
  }

  /** `GET /operator/inspect/activities` (includes soft-deleted, with deleted_at). */
  inspectActivities(params?: PageParams): Promise<Page<InspectorActivity>> {
    return this.get("/operator/inspect/activities", pageQuery(params));
  }

  /** `GET /operator/inspect/feeds/{group}/{id}` */
  inspectFeed(feed: FeedRef, params?: PageParams): Promise<FeedPage> {
    return this.get(feedPath("/operator/inspect/feeds", feed), pageQuery(params));
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/follows` */
  inspectFollows(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.get(`${feedPath("/operator/inspect/feeds", feed)}/follows`, pageQuery(params));
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/followers` */
  inspectFollowers(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.get(`${feedPath("/operator/inspect/feeds", feed)}/followers`, pageQuery(params));
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/stats` */
  inspectStats(feed: FeedRef): Promise<FollowStats> {
    return this.get(`${feedPath("/operator/inspect/feeds", feed)}/stats`);
  }

  // Webhooks (operator view)

  /** `GET /operator/webhooks/events` */
  webhookEvents(params?: PageParams): Promise<Page<WebhookEventRecord>> {
    return this.get("/operator/webhooks/events", pageQuery(params));
  }

  /** `GET /operator/webhooks/destinations` (no secrets). */
  webhookDestinations(params?: PageParams): Promise<Page<WebhookDestination>> {
    return this.get("/operator/webhooks/destinations", pageQuery(params));
  }

  /** `POST /operator/webhooks/test` (202) → `{published}`. */
  sendTestWebhook(): Promise<TestWebhookResult> {
    return this.post("/operator/webhooks/test");
  }

  /** `GET /operator/signal`, conditional on `etag`. */
  signal(options: { etag?: string } = {}): Promise<SignalResult<OperatorSignal>> {
    return this.conditionalGet("/operator/signal", {}, options.etag);
  }

  // Platform admin (staff session)

  /** `GET /admin/tenants` */
  listTenants(params?: PageParams): Promise<Page<Tenant>> {
    return this.get("/admin/tenants", pageQuery(params));
  }

  /** `POST /admin/tenants` `{name, rate_limit_per_minute?}` → `{tenant, api_secret}`. */
  createTenant(input: CreateTenantInput): Promise<CreatedTenant> {
    return this.post("/admin/tenants", input);
  }

  /** `GET /admin/tenants/{id}` */
  getTenant(id: string): Promise<Tenant> {
    return this.get(p`/admin/tenants/${id}`);
  }

  /** `POST /admin/tenants/{id}/suspend` */
  suspendTenant(id: string): Promise<Tenant> {
    return this.post(p`/admin/tenants/${id}/suspend`);
  }

  /** `POST /admin/tenants/{id}/reactivate` */
  reactivateTenant(id: string): Promise<Tenant> {
    return this.post(p`/admin/tenants/${id}/reactivate`);
  }

  /** `POST /admin/tenants/{id}/rotate-secret` → `{api_secret}`. */
  rotateTenantSecret(id: string): Promise<SecretResult> {
    return this.post(p`/admin/tenants/${id}/rotate-secret`);
  }

  /** `POST /admin/tenants/{id}/operators` `{email, name, role}` → `{teammate, invite_token, expires_at}`. */
  createTenantOperator(id: string, input: InviteInput): Promise<InviteResult> {
    return this.post(p`/admin/tenants/${id}/operators`, input);
  }

  /** `GET /admin/queues` */
  adminQueues(): Promise<AdminQueues> {
    return this.get("/admin/queues");
  }
}
