/**
 * Response and request shapes of the API as JSON (snake_case field names, interface section 2 and
 * contract section 2). These are plain TypeScript types; nothing is validated at run time.
 */

import type { WebhookEventType } from "./schemas-webhooks.js";

export type JsonObject = Record<string, unknown>;
/** ISO 8601 date-time string. */
export type DateTime = string;

/** `{results, next}`; `next` is null on the last page. */
export interface Page<T> {
  results: T[];
  next: string | null;
}

/** Paging query of every paged route (`cursor` is the deprecated alias of `next`). */
export interface PageParams {
  limit?: number | undefined;
  /** Opaque cursor from the previous page; null/undefined for the first page. */
  next?: string | null | undefined;
  /** Deprecated alias of `next`. */
  cursor?: string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Feed API
// ---------------------------------------------------------------------------------------------

/** Enrichment of a `user:<id>` actor (same shape on activities and notifications). */
export interface ActorUser {
  id: string;
  custom: JsonObject;
}

export interface Activity {
  id: string;
  actor: string;
  verb: string;
  object: string;
  target?: string | null;
  foreign_id?: string | null;
  time: DateTime;
  custom: JsonObject;
  origin_feed: string;
  reaction_counts: Record<string, number>;
  actor_user?: ActorUser | null;
  /** Reaction kinds of the calling user; omitted for server tokens. */
  own_reactions?: string[];
  refs: string[];
  edited_at: DateTime | null;
  version: number;
  /** Only on the answer to adding an activity; e.g. `actor_user_unresolved`. */
  warnings?: string[];
}

/** Operator inspector view of an activity (includes soft-deleted tombstones). */
export interface InspectorActivity extends Activity {
  deleted_at: DateTime | null;
}

/** Entry of the `promoted` sidecar of a feed read. */
export interface PromotedActivity {
  id: string;
  actor: string;
  verb: string;
  object: string;
  custom: JsonObject;
  promoted: true;
}

export interface PromotedAudience {
  users?: string[];
  /** Feed refs `group:id`. */
  feeds?: string[];
}

/** `audience` as the stored record answers it: both lists, possibly empty. */
export interface PromotedRecordAudience {
  users: string[];
  /** Feed refs `group:id`. */
  feeds: string[];
}

/** The stored promoted record (answer to create, entries of the server listing). */
export interface PromotedRecord {
  id: string;
  actor: string;
  verb: string;
  object: string;
  custom: JsonObject;
  promoted: true;
  /** null when the record targets every read. */
  audience: PromotedRecordAudience | null;
  served_count: number;
  created_at: DateTime;
  retracted_at: DateTime | null;
}

/** The interface's Object (named FeedObject to avoid clashing with the global `Object`). */
export interface FeedObject {
  type: string;
  id: string;
  custom: JsonObject;
  updated_at: DateTime;
}

/** Answer of a feed read (`GET /v1/feeds/{group}/{id}`) and of the operator feed inspector. */
export interface FeedPage<A = Activity> extends Page<A> {
  /** Only on a first page (no next/cursor sent). */
  promoted?: PromotedActivity[];
  /** `type:id` → Object for the refs of the page's activities; absent when there are none. */
  objects?: Record<string, FeedObject>;
}

export interface AddActivityInput {
  /** Required for server tokens; ignored (overwritten) for user tokens. */
  actor?: string;
  verb: string;
  object: string;
  target?: string;
  /** Requires `time`; (foreign_id, time) is the dedupe identity. */
  foreign_id?: string;
  time?: DateTime;
  custom?: JsonObject;
  /** `type:id`, at most 4, no duplicates. */
  refs?: string[];
}

export interface PatchActivityInput {
  /** Keys are paths starting with `custom.`. */
  set?: Record<string, unknown>;
  /** Paths starting with `custom.`. */
  unset?: string[];
  /** Replaces the refs (`type:id`). */
  refs?: string[];
}

export interface Follow {
  source_group: string;
  source_id: string;
  target_group: string;
  target_id: string;
  created_at: DateTime;
}

export interface FollowStats {
  feed: string;
  follower_count: number;
  following_count: number;
}

export interface Suggestion {
  /** Always `user`. */
  group: string;
  id: string;
  mutuals: number;
}

export interface Suggestions {
  results: Suggestion[];
}

/** `GET /v1/feeds/{group}/{id}/signal` */
export interface FeedSignal {
  feed: string;
  version: number;
  head: string | null;
}

export interface Reaction {
  id: string;
  activity_id: string;
  user_id: string;
  kind: string;
  created_at: DateTime;
}

export interface Reply {
  id: string;
  activity_id: string;
  parent_id: string | null;
  user_id: string;
  text: string;
  reply_count: number;
  created_at: DateTime;
  edited_at: DateTime | null;
}
/** A comment is a Reply without a parent. */
export type Comment = Reply;

export interface AddCommentInput {
  text: string;
  parent_id?: string;
  /** Server tokens must send it. */
  user_id?: string;
}

export interface Notification {
  id: string;
  verb: "follow" | "react" | "comment" | (string & {});
  actor: string;
  object: string;
  reaction_kind: string | null;
  activity_id: string | null;
  created_at: DateTime;
  seen_at: DateTime | null;
  read_at: DateTime | null;
  actor_user?: ActorUser | null;
}

export interface NotificationCounts {
  unseen: number;
  unread: number;
}

export interface NotificationPage extends Page<Notification>, NotificationCounts {}

/** `GET /v1/notifications/signal` */
export interface NotificationSignal extends NotificationCounts {
  version: number;
}

export interface MarkNotificationsInput {
  /** true: all; or a list of notification ids. */
  seen?: true | string[];
  /** true: all; or a list of notification ids. Read implies seen. */
  read?: true | string[];
  /** Server tokens: whose notifications. */
  owner?: string;
}

export interface User {
  id: string;
  custom: JsonObject;
  created_at: DateTime;
  updated_at: DateTime;
}

/** Operator list view of a user (`custom` deliberately absent). */
export interface UserListItem {
  id: string;
  created_at: DateTime;
  updated_at: DateTime;
  /** Typed nullable defensively: the interface says date-time. */
  revoked_before: DateTime | null;
}

export interface RevokeTokensResult {
  revoked_before: DateTime;
}

export interface UserInput {
  id: string;
  custom: JsonObject;
}

export interface ObjectInput {
  type: string;
  id: string;
  custom: JsonObject;
}

export interface PatchObjectInput {
  set?: Record<string, unknown>;
  unset?: string[];
}

export interface BulkObjectsResult {
  results: FeedObject[];
}

export interface ObjectsByRef {
  objects: Record<string, FeedObject>;
}

export interface CreatePromotedInput {
  actor: string;
  verb: string;
  object: string;
  custom?: JsonObject;
  audience?: PromotedAudience;
}

// ---------------------------------------------------------------------------------------------
// Batch import
// ---------------------------------------------------------------------------------------------

export interface BatchResultItem {
  index: number;
  ok: boolean;
  /** Present when ok, for users and activities. */
  id?: string;
  /** Error code, present when not ok. */
  code?: string;
}

export interface BatchResult {
  results: BatchResultItem[];
}

export interface BatchFollowInput {
  /** Feed ref `group:id`. */
  source: string;
  /** Feed ref `group:id`. */
  target: string;
}

export interface BatchActivityInput {
  /** Destination feed ref `group:id`. */
  feed: string;
  /** The add-activity body; batch routes are server-only, so `actor` is required. */
  activity: AddActivityInput & { actor: string };
}

// ---------------------------------------------------------------------------------------------
// Webhooks, moderation
// ---------------------------------------------------------------------------------------------

/** A webhook destination as every list shows it: never its signing secret. */
export interface WebhookDestination {
  id: string;
  url: string;
  /** The event types it wants; null: every type. */
  events: string[] | null;
  created_at: DateTime;
}

export interface CreateWebhookInput {
  url: string;
  /** Event types (contract section 3); omitted: every type. */
  events?: WebhookEventType[];
}

export interface CreatedWebhook {
  destination: WebhookDestination;
  /** `whsec_...`, shown once. */
  signing_secret: string;
}

/** Published webhook event record (operator log): one per event and destination. */
export interface WebhookEventRecord {
  id: string;
  event_id: string;
  event_type: string;
  destination_id: string;
  /** `pending` until an attempt is answered 2xx (`published`) or given up (`failed`). */
  status: "pending" | "published" | "failed";
  attempts: number;
  created_at: DateTime;
}

/** Delivery body of a webhook (contract section 3). */
export interface WebhookEvent<D = unknown> {
  id: string;
  type: string;
  created_at: DateTime;
  tenant_id: string;
  data: D;
}

/** Answer of `PUT` and `GET /v1/moderation/blocklist`: the terms as stored (trimmed, lower-cased, sorted). */
export interface Blocklist {
  terms: string[];
}

// ---------------------------------------------------------------------------------------------
// Health
// ---------------------------------------------------------------------------------------------

export interface Health {
  status: string;
  version: string;
}

export interface ReadinessCheck {
  name: string;
  ok: boolean;
  [key: string]: unknown;
}

/** 200 `{status, checks}`; 503 `{status: "unavailable", checks}`. */
export interface Readiness {
  status: string;
  checks: ReadinessCheck[];
}

export type QueueName = "fanout" | "notify" | "webhooks";

export interface QueueDepth {
  queue: QueueName | (string & {});
  pending: number;
  dlq_depth: number;
}

export interface AdminQueues {
  queues: QueueDepth[];
}

// ---------------------------------------------------------------------------------------------
// Operator and admin
// ---------------------------------------------------------------------------------------------

export type OperatorRole = "staff" | "owner" | "member";
export type TeamRole = "owner" | "member";

export interface Operator {
  id: string;
  name: string;
  email: string;
  role: OperatorRole;
  tenant_id: string | null;
}

/** Answer of login and invite acceptance. */
export interface OperatorSession {
  token: string;
  expires_at: DateTime;
  operator: Operator;
}

export interface Teammate {
  id: string;
  email: string;
  name: string;
  role: TeamRole;
  status: "active" | "disabled";
  created_at: DateTime;
  invite_pending: boolean;
}

export interface InviteInput {
  email: string;
  name: string;
  role: TeamRole;
}

/** Answer of an invite and of the admin's create-operator. */
export interface InviteResult {
  teammate: Teammate;
  invite_token: string;
  expires_at: DateTime;
}

export interface Tenant {
  id: string;
  name: string;
  api_key: string;
  status: "active" | "suspended";
  created_at: DateTime;
  /** Admin views only (absent from `GET /operator/tenant`); null when the default limit applies. */
  rate_limit_per_minute?: number | null;
}

export interface CreateTenantInput {
  name: string;
  rate_limit_per_minute?: number;
}

export interface CreatedTenant {
  tenant: Tenant;
  /** Returned once. */
  api_secret: string;
}

export interface SecretResult {
  api_secret: string;
}

export interface TestWebhookResult {
  published: number;
}

/** `GET /operator/signal` */
export interface OperatorSignal {
  version: number;
  counts: { activities: number; users: number; webhook_events: number };
}

/** Result of a conditional (`If-None-Match`) signal read. */
export type SignalResult<T> =
  | { notModified: false; etag: string | null; body: T }
  | { notModified: true; etag: string | null; body?: undefined };
