import type { z } from "zod";
import * as c from "@feeds/contract";

// The shapes the OpenAPI document names (components.schemas), so generators produce one type per
// shape and every use is a $ref. Answers are rendered as `output`, requests as `input`, so each
// side has its own names; a request body no other route shares is named after its operation.

/** Answers, by component name. */
export const answerComponents: readonly (readonly [string, z.ZodType])[] = [
  ["Activity", c.activitySchema],
  ["AddedActivity", c.addedActivitySchema],
  ["InspectorActivity", c.inspectorActivitySchema],
  ["InspectorActivityPage", c.inspectorActivityPage],
  ["ActorUser", c.actorUserSchema],
  ["FeedPage", c.feedPageSchema],
  ["FeedSignal", c.feedSignalSchema],
  ["FeedObject", c.feedObjectSchema],
  ["ObjectsByRef", c.objectsByRefSchema],
  ["BulkObjects", c.bulkObjectsSchema],
  ["PromotedActivity", c.promotedActivitySchema],
  ["PromotedRecord", c.promotedRecordSchema],
  ["PromotedRecordPage", c.promotedRecordPage],
  ["Follow", c.followSchema],
  ["FollowPage", c.followPage],
  ["FollowStats", c.followStatsSchema],
  ["Suggestion", c.suggestionSchema],
  ["Suggestions", c.suggestionsSchema],
  ["Reaction", c.reactionSchema],
  ["ReactionPage", c.reactionPage],
  ["Comment", c.replySchema],
  ["CommentPage", c.replyPage],
  ["Blocklist", c.blocklistSchema],
  ["ReactionKinds", c.reactionKindsSchema],
  ["Notification", c.notificationSchema],
  ["NotificationCounts", c.notificationCountsSchema],
  ["NotificationPage", c.notificationPageSchema],
  ["NotificationSignal", c.notificationSignalSchema],
  ["NotificationGroup", c.notificationGroupSchema],
  ["NotificationGroupPage", c.notificationGroupPageSchema],
  ["User", c.userSchema],
  ["UserListItem", c.userListItemSchema],
  ["UserListPage", c.userListPage],
  ["RevokedTokens", c.revokeTokensSchema],
  ["BatchResultItem", c.batchResultItemSchema],
  ["BatchResult", c.batchResultSchema],
  ["Health", c.healthSchema],
  ["ReadinessCheck", c.readinessCheckSchema],
  ["Readiness", c.readinessSchema],
  ["QueueDepth", c.queueDepthSchema],
  ["AdminQueues", c.adminQueuesSchema],
  ["Operator", c.operatorSchema],
  ["OperatorSession", c.operatorSessionSchema],
  ["OperatorSignal", c.operatorSignalSchema],
  ["Teammate", c.teammateSchema],
  ["TeammatePage", c.teammatePage],
  ["InviteResult", c.inviteResultSchema],
  ["Tenant", c.tenantSchema],
  ["AdminTenant", c.adminTenantSchema],
  ["AdminTenantPage", c.adminTenantPage],
  ["CreatedTenant", c.createdTenantSchema],
  ["Secret", c.secretSchema],
  ["WebhookDestination", c.webhookDestinationSchema],
  ["WebhookDestinationPage", c.webhookDestinationPage],
  ["CreatedWebhook", c.createdWebhookSchema],
  ["WebhookEventRecord", c.webhookEventRecordSchema],
  ["WebhookEventRecordPage", c.webhookEventRecordPage],
  ["TestWebhookResult", c.testWebhookSchema],
];

/** Request parts shared by several routes, by component name (other bodies: `<OperationId>Request`). */
export const requestComponents: readonly (readonly [string, z.ZodType])[] = [
  ["FeedRef", c.graphFeedRef],
  ["InviteRequest", c.inviteBody],
];

const activityId = "5f0c7a3e-2b1d-4c8e-9f6a-0d1e2c3b4a59";
const at = "2025-05-01T12:00:00.000Z";
/** The Notification example, also the newest member of the NotificationGroup example. */
const notification = {
  id: "3c9a8b7d-1e2f-4a5b-8c6d-7e8f9a0b1c2d",
  verb: "react",
  actor: "user:bob",
  object: activityId,
  reaction_kind: "like",
  activity_id: null,
  created_at: at,
  seen_at: null,
  read_at: null,
};

/** Examples of the main resources, shown on their components (each valid against its schema). */
export const examples: Readonly<Record<string, unknown>> = {
  Activity: {
    id: activityId,
    actor: "user:alice",
    verb: "post",
    object: "photo:42",
    target: null,
    foreign_id: "post:981",
    time: at,
    custom: { caption: "Sunset at the pier" },
    origin_feed: "user:alice",
    reaction_counts: { like: 3 },
    actor_user: { id: "alice", custom: { name: "Alice" } },
    refs: ["photo:42"],
    edited_at: null,
    version: 1,
  },
  Follow: { source_group: "timeline", source_id: "bob", target_group: "user", target_id: "alice", created_at: at },
  Reaction: { id: "0b7e3a52-6f0e-4d8e-9a49-3c1e2f4a5b6c", activity_id: activityId, user_id: "bob", kind: "like", created_at: at },
  Comment: {
    id: "9d2c1b0a-8f7e-4d6c-8b5a-493827160504",
    activity_id: activityId,
    parent_id: null,
    user_id: "bob",
    text: "Lovely light!",
    reply_count: 0,
    created_at: at,
    edited_at: null,
  },
  Notification: notification,
  NotificationGroup: {
    group_key: "4f1d0c9b8a7e6d5c4b3a29180f1e2d3c",
    verb: "react",
    reaction_kind: "like",
    object: activityId,
    activity_id: null,
    activity_count: 30,
    actor_count: 29,
    actors: [{ id: "bob", custom: { name: "Bob" } }],
    latest: [{ ...notification, actor_user: { id: "bob", custom: { name: "Bob" } } }],
    first_at: "2025-05-01T09:30:00.000Z",
    updated_at: at,
    seen_at: null,
    read_at: null,
  },
  Tenant: { id: "t_8f3a", name: "Acme", api_key: "ak_8f3a", status: "active", created_at: at },
  User: { id: "alice", custom: { name: "Alice" }, created_at: at, updated_at: at },
};
