/**
 * Response and request shapes of the API as JSON (snake_case field names, interface section 2 and
 * contract section 2), inferred from the zod schemas the gateway validates requests with and
 * documents answers with (`schemas*.ts`, `responses*.ts`): answers are `z.output` of their
 * response schema, request bodies `z.input` of their request schema. Nothing here is typed by hand
 * except the generic helpers (`Page<T>`, `SignalResult<T>`) and the clients' paging options.
 */

import type { z } from "zod";
import type { pageQuery, createTenantBody, inviteBody, operatorRole, queueParams, batchUserItem } from "./schemas.js";
import type { addActivityBody, batchActivityItem, patchActivityBody } from "./schemas-feeds.js";
import type { batchFollowItem } from "./schemas-graph.js";
import type { batchObjectItem, patchObjectBody } from "./schemas-objects.js";
import type { createPromotedBody } from "./schemas-promoted.js";
import type { markNotificationGroupsBody, markNotificationsBody } from "./schemas-notifications.js";
import type { createWebhookBody } from "./schemas-webhooks.js";
import type { addCommentBody } from "./schemas-engagement.js";
import type * as common from "./responses.js";
import type * as feeds from "./responses-feeds.js";
import type * as engagement from "./responses-engagement.js";
import type * as webhooks from "./responses-webhooks.js";
import type * as operator from "./responses-operator.js";

export type JsonObject = Record<string, unknown>;
/** ISO 8601 date-time string. */
export type DateTime = string;

/** `{results, next}`; `next` is null on the last page (the shape of `pageOf(item)`). */
export interface Page<T> {
  results: T[];
  next: string | null;
}

/** Paging options of every paged method (`cursor` is the deprecated alias of `next`). */
export type PageParams = Partial<Pick<z.output<typeof pageQuery>, "limit" | "cursor">> & {
  /** Opaque cursor from the previous page; null/undefined for the first page. */
  next?: string | null | undefined;
};

/** Result of a conditional (`If-None-Match`) signal read. */
export type SignalResult<T> =
  | { notModified: false; etag: string | null; body: T }
  | { notModified: true; etag: string | null; body?: undefined };

// Feed API answers
export type ActorUser = z.output<typeof common.actorUserSchema>;
export type Activity = z.output<typeof feeds.activitySchema>;
/** The answer to adding an activity: an Activity with `warnings` when there are any. */
export type AddedActivity = z.output<typeof feeds.addedActivitySchema>;
export type InspectorActivity = z.output<typeof feeds.inspectorActivitySchema>;
export type PromotedActivity = z.output<typeof feeds.promotedActivitySchema>;
export type PromotedRecord = z.output<typeof feeds.promotedRecordSchema>;
export type PromotedRecordAudience = NonNullable<PromotedRecord["audience"]>;
/** The interface's Object (named FeedObject to avoid clashing with the global `Object`). */
export type FeedObject = z.output<typeof feeds.feedObjectSchema>;
export type FeedPage = z.output<typeof feeds.feedPageSchema>;
export type FeedSignal = z.output<typeof feeds.feedSignalSchema>;
export type Follow = z.output<typeof feeds.followSchema>;
export type FollowStats = z.output<typeof feeds.followStatsSchema>;
export type Suggestion = z.output<typeof feeds.suggestionSchema>;
export type Suggestions = z.output<typeof feeds.suggestionsSchema>;
export type BulkObjectsResult = z.output<typeof feeds.bulkObjectsSchema>;
export type ObjectsByRef = z.output<typeof feeds.objectsByRefSchema>;
export type Reaction = z.output<typeof engagement.reactionSchema>;
export type Reply = z.output<typeof engagement.replySchema>;
/** A comment is a Reply without a parent. */
export type Comment = Reply;
export type Blocklist = z.output<typeof engagement.blocklistSchema>;
export type ReactionKinds = z.output<typeof engagement.reactionKindsSchema>;
export type Notification = z.output<typeof engagement.notificationSchema>;
export type NotificationCounts = z.output<typeof engagement.notificationCountsSchema>;
export type NotificationPage = z.output<typeof engagement.notificationPageSchema>;
export type NotificationSignal = z.output<typeof engagement.notificationSignalSchema>;
export type NotificationGroup = z.output<typeof engagement.notificationGroupSchema>;
export type NotificationGroupPage = z.output<typeof engagement.notificationGroupPageSchema>;
export type NotificationGroupMembers = z.output<typeof engagement.notificationGroupMembersSchema>;
export type User = z.output<typeof common.userSchema>;
export type RevokeTokensResult = z.output<typeof common.revokeTokensSchema>;
export type BatchResultItem = z.output<typeof common.batchResultItemSchema>;
export type BatchResult = z.output<typeof common.batchResultSchema>;

// Feed API requests
export type AddActivityInput = z.input<typeof addActivityBody>;
export type PatchActivityInput = z.input<typeof patchActivityBody>;
export type AddCommentInput = z.input<typeof addCommentBody>;
export type MarkNotificationsInput = z.input<typeof markNotificationsBody>;
export type MarkNotificationGroupsInput = z.input<typeof markNotificationGroupsBody>;
export type UserInput = z.input<typeof batchUserItem>;
export type ObjectInput = z.input<typeof batchObjectItem>;
export type PatchObjectInput = z.input<typeof patchObjectBody>;
export type CreatePromotedInput = z.input<typeof createPromotedBody>;
export type PromotedAudience = NonNullable<CreatePromotedInput["audience"]>;
export type BatchFollowInput = z.input<typeof batchFollowItem>;
export type BatchActivityInput = z.input<typeof batchActivityItem>;

// Webhooks
export type WebhookDestination = z.output<typeof webhooks.webhookDestinationSchema>;
export type CreateWebhookInput = z.input<typeof createWebhookBody>;
export type CreatedWebhook = z.output<typeof webhooks.createdWebhookSchema>;
export type WebhookEventRecord = z.output<typeof webhooks.webhookEventRecordSchema>;
export type TestWebhookResult = z.output<typeof webhooks.testWebhookSchema>;
/** Delivery body of a webhook (contract section 3); `data` typed by the caller. */
export type WebhookEvent<D = unknown> = Omit<z.output<typeof webhooks.webhookEventSchema>, "data"> & { data: D };

// Health
export type Health = z.output<typeof common.healthSchema>;
export type ReadinessCheck = z.output<typeof common.readinessCheckSchema>;
export type Readiness = z.output<typeof common.readinessSchema>;
export type QueueName = z.output<typeof queueParams>["queue"];
export type QueueDepth = z.output<typeof common.queueDepthSchema>;
export type AdminQueues = z.output<typeof common.adminQueuesSchema>;

// Operator and admin
export type Operator = z.output<typeof operator.operatorSchema>;
export type OperatorRole = Operator["role"];
export type TeamRole = z.output<typeof operatorRole>;
export type OperatorSession = z.output<typeof operator.operatorSessionSchema>;
export type Teammate = z.output<typeof operator.teammateSchema>;
export type InviteInput = z.input<typeof inviteBody>;
export type InviteResult = z.output<typeof operator.inviteResultSchema>;
/** A tenant as its operators see it (`GET /operator/tenant`). */
export type Tenant = z.output<typeof operator.tenantSchema>;
/** A tenant as platform staff see it (`/admin`): also `rate_limit_per_minute`. */
export type AdminTenant = z.output<typeof operator.adminTenantSchema>;
export type CreateTenantInput = z.input<typeof createTenantBody>;
export type CreatedTenant = z.output<typeof operator.createdTenantSchema>;
export type SecretResult = z.output<typeof operator.secretSchema>;
export type UserListItem = z.output<typeof operator.userListItemSchema>;
export type OperatorSignal = z.output<typeof operator.operatorSignalSchema>;
