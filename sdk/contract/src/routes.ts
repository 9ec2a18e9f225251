import { route } from "./route-def.js";
import { adminRoutes, operatorRoutes } from "./routes-operator.js";
import { pageQuery, queueParams, upsertUserBody, userIdParams, batchUsersBody } from "./schemas.js";
import { activityIdParams, addActivityBody, batchActivitiesBody, feedPageQuery, feedParams, patchActivityBody } from "./schemas-feeds.js";
import { batchFollowsBody, followBody, graphFeedParams, suggestionsQuery, unfollowParams, unfollowQuery } from "./schemas-graph.js";
import { batchObjectsBody, bulkObjectsBody, objectParams, objectRefsQuery, patchObjectBody, putObjectBody } from "./schemas-objects.js";
import { createPromotedBody, promotedIdParams, promotedPageQuery } from "./schemas-promoted.js";
import { markNotificationsBody, notificationPageQuery, notificationSignalQuery } from "./schemas-notifications.js";
import { createWebhookBody, webhookIdParams, webhookPageQuery } from "./schemas-webhooks.js";
import {
  actingUserQuery,
  addCommentBody,
  blocklistBody,
  commentsQuery,
  editCommentBody,
  engagementIdParams,
  reactBody,
  reactionKindsBody,
  reactionsQuery,
  unreactParams,
} from "./schemas-engagement.js";
import { batchResultSchema, healthSchema, queueDepthSchema, readinessSchema, revokeTokensSchema, userSchema } from "./responses.js";
import {
  activitySchema,
  addedActivitySchema,
  bulkObjectsSchema,
  feedObjectSchema,
  feedPageSchema,
  feedSignalSchema,
  followPage,
  followSchema,
  followStatsSchema,
  objectsByRefSchema,
  promotedRecordPage,
  promotedRecordSchema,
  suggestionsSchema,
} from "./responses-feeds.js";
import {
  blocklistSchema,
  notificationCountsSchema,
  notificationPageSchema,
  notificationSignalSchema,
  reactionKindsSchema,
  reactionPage,
  reactionSchema,
  replyPage,
  replySchema,
} from "./responses-engagement.js";
import { createdWebhookSchema, webhookDestinationPage } from "./responses-webhooks.js";

// The route table: every route the SDK calls, grouped by the clients that call it. A method of a
// client is named after its route here and built from it; sdk/test/routes.test.ts checks that,
// and test/e2e/sdk-routes.test.ts checks this table against the gateway's /openapi.json.

const none = { 204: null } as const;

/** Unauthenticated monitoring: every client. */
export const healthRoutes = {
  health: route({ method: "GET", path: "/v1/health", auth: "none", responses: { 200: healthSchema } }),
  ready: route({ method: "GET", path: "/v1/health/ready", auth: "none", responses: { 200: readinessSchema, 503: readinessSchema } }),
  queueDepth: route({ method: "GET", path: "/v1/health/queues/{queue}", auth: "none", params: queueParams, responses: { 200: queueDepthSchema } }),
};

const feed = "/v1/feeds/{group}/{id}";
const activity = "/v1/activities/{id}";

/** Server and user tokens: ServerClient and UserClient. */
export const feedApiRoutes = {
  readFeed: route({ method: "GET", path: feed, auth: "tenant", params: feedParams, query: feedPageQuery, responses: { 200: feedPageSchema } }),
  addActivity: route({
    method: "POST",
    path: `${feed}/activities`,
    auth: "tenant",
    params: feedParams,
    body: addActivityBody,
    responses: { 201: addedActivitySchema },
  }),
  feedSignal: route({ method: "GET", path: `${feed}/signal`, auth: "tenant", params: feedParams, responses: { 200: feedSignalSchema, 304: null } }),
  getActivity: route({ method: "GET", path: activity, auth: "tenant", params: activityIdParams, responses: { 200: activitySchema } }),
  patchActivity: route({
    method: "PATCH",
    path: activity,
    auth: "tenant",
    params: activityIdParams,
    body: patchActivityBody,
    responses: { 200: activitySchema },
  }),
  deleteActivity: route({ method: "DELETE", path: activity, auth: "tenant", params: activityIdParams, responses: none }),
  follow: route({
    method: "POST",
    path: `${feed}/follows`,
    auth: "tenant",
    params: graphFeedParams,
    body: followBody,
    responses: { 201: followSchema, 200: followSchema },
  }),
  unfollow: route({
    method: "DELETE",
    path: `${feed}/follows/{target_group}/{target_id}`,
    auth: "tenant",
    params: unfollowParams,
    query: unfollowQuery,
    responses: none,
  }),
  follows: route({
    method: "GET",
    path: `${feed}/follows`,
    auth: "tenant",
    params: graphFeedParams,
    query: pageQuery,
    responses: { 200: followPage },
  }),
  followers: route({
    method: "GET",
    path: `${feed}/followers`,
    auth: "tenant",
    params: graphFeedParams,
    query: pageQuery,
    responses: { 200: followPage },
  }),
  stats: route({ method: "GET", path: `${feed}/stats`, auth: "tenant", params: graphFeedParams, responses: { 200: followStatsSchema } }),
  suggestions: route({
    method: "GET",
    path: `${feed}/suggestions`,
    auth: "tenant",
    params: graphFeedParams,
    query: suggestionsQuery,
    responses: { 200: suggestionsSchema },
  }),
  react: route({
    method: "POST",
    path: `${activity}/reactions`,
    auth: "tenant",
    params: engagementIdParams,
    body: reactBody,
    responses: { 201: reactionSchema, 200: reactionSchema },
  }),
  reactions: route({
    method: "GET",
    path: `${activity}/reactions`,
    auth: "tenant",
    params: engagementIdParams,
    query: reactionsQuery,
    responses: { 200: reactionPage },
  }),
  unreact: route({
    method: "DELETE",
    path: `${activity}/reactions/{kind}`,
    auth: "tenant",
    params: unreactParams,
    query: actingUserQuery,
    responses: none,
  }),
  deleteReaction: route({ method: "DELETE", path: "/v1/reactions/{id}", auth: "tenant", params: engagementIdParams, responses: none }),
  addComment: route({
    method: "POST",
    path: `${activity}/comments`,
    auth: "tenant",
    params: engagementIdParams,
    body: addCommentBody,
    responses: { 201: replySchema },
  }),
  comments: route({
    method: "GET",
    path: `${activity}/comments`,
    auth: "tenant",
    params: engagementIdParams,
    query: commentsQuery,
    responses: { 200: replyPage },
  }),
  replies: route({
    method: "GET",
    path: "/v1/comments/{id}/replies",
    auth: "tenant",
    params: engagementIdParams,
    query: commentsQuery,
    responses: { 200: replyPage },
  }),
  editComment: route({
    method: "PATCH",
    path: "/v1/comments/{id}",
    auth: "tenant",
    params: engagementIdParams,
    body: editCommentBody,
    responses: { 200: replySchema },
  }),
  deleteComment: route({
    method: "DELETE",
    path: "/v1/comments/{id}",
    auth: "tenant",
    params: engagementIdParams,
    query: actingUserQuery,
    responses: none,
  }),
  notifications: route({
    method: "GET",
    path: "/v1/notifications",
    auth: "tenant",
    query: notificationPageQuery,
    responses: { 200: notificationPageSchema },
  }),
  markNotifications: route({
    method: "POST",
    path: "/v1/notifications/mark",
    auth: "tenant",
    body: markNotificationsBody,
    responses: { 200: notificationCountsSchema },
  }),
  notificationSignal: route({
    method: "GET",
    path: "/v1/notifications/signal",
    auth: "tenant",
    query: notificationSignalQuery,
    responses: { 200: notificationSignalSchema, 304: null },
  }),
  getObject: route({ method: "GET", path: "/v1/objects/{type}/{id}", auth: "tenant", params: objectParams, responses: { 200: feedObjectSchema } }),
  getObjects: route({ method: "GET", path: "/v1/objects", auth: "tenant", query: objectRefsQuery, responses: { 200: objectsByRefSchema } }),
  getUser: route({ method: "GET", path: "/v1/users/{id}", auth: "tenant", params: userIdParams, responses: { 200: userSchema } }),
};

const object = "/v1/objects/{type}/{id}";

/** Server tokens only: ServerClient. */
export const serverRoutes = {
  upsertUser: route({
    method: "PUT",
    path: "/v1/users/{id}",
    auth: "server",
    params: userIdParams,
    body: upsertUserBody,
    responses: { 201: userSchema, 200: userSchema },
  }),
  revokeTokens: route({
    method: "POST",
    path: "/v1/users/{id}/revoke-tokens",
    auth: "server",
    params: userIdParams,
    responses: { 200: revokeTokensSchema },
  }),
  batchUsers: route({ method: "POST", path: "/v1/batch/users", auth: "server", body: batchUsersBody, responses: { 200: batchResultSchema } }),
  batchObjects: route({ method: "POST", path: "/v1/batch/objects", auth: "server", body: batchObjectsBody, responses: { 200: batchResultSchema } }),
  batchFollows: route({ method: "POST", path: "/v1/batch/follows", auth: "server", body: batchFollowsBody, responses: { 200: batchResultSchema } }),
  batchActivities: route({
    method: "POST",
    path: "/v1/batch/activities",
    auth: "server",
    body: batchActivitiesBody,
    responses: { 200: batchResultSchema },
  }),
  putObject: route({
    method: "PUT",
    path: object,
    auth: "server",
    params: objectParams,
    body: putObjectBody,
    responses: { 201: feedObjectSchema, 200: feedObjectSchema },
  }),
  patchObject: route({
    method: "PATCH",
    path: object,
    auth: "server",
    params: objectParams,
    body: patchObjectBody,
    responses: { 200: feedObjectSchema },
  }),
  deleteObject: route({ method: "DELETE", path: object, auth: "server", params: objectParams, responses: none }),
  bulkObjects: route({ method: "POST", path: "/v1/objects/bulk", auth: "server", body: bulkObjectsBody, responses: { 200: bulkObjectsSchema } }),
  createPromoted: route({ method: "POST", path: "/v1/promoted", auth: "server", body: createPromotedBody, responses: { 201: promotedRecordSchema } }),
  listPromoted: route({ method: "GET", path: "/v1/promoted", auth: "server", query: promotedPageQuery, responses: { 200: promotedRecordPage } }),
  retractPromoted: route({ method: "DELETE", path: "/v1/promoted/{id}", auth: "server", params: promotedIdParams, responses: none }),
  listWebhooks: route({ method: "GET", path: "/v1/webhooks", auth: "server", query: webhookPageQuery, responses: { 200: webhookDestinationPage } }),
  createWebhook: route({ method: "POST", path: "/v1/webhooks", auth: "server", body: createWebhookBody, responses: { 201: createdWebhookSchema } }),
  deleteWebhook: route({ method: "DELETE", path: "/v1/webhooks/{id}", auth: "server", params: webhookIdParams, responses: none }),
  setBlocklist: route({ method: "PUT", path: "/v1/moderation/blocklist", auth: "server", body: blocklistBody, responses: { 200: blocklistSchema } }),
  getBlocklist: route({ method: "GET", path: "/v1/moderation/blocklist", auth: "server", responses: { 200: blocklistSchema } }),
  setReactionKinds: route({ method: "PUT", path: "/v1/reactions/kinds", auth: "server", body: reactionKindsBody, responses: { 200: reactionKindsSchema } }),
  getReactionKinds: route({ method: "GET", path: "/v1/reactions/kinds", auth: "server", responses: { 200: reactionKindsSchema } }),
};

/** User tokens only: UserClient. */
export const userRoutes = {
  me: route({ method: "GET", path: "/v1/me", auth: "user", responses: { 200: userSchema } }),
};

/** Every route the SDK calls, by the clients that call it (health: every client). */
export const routes = {
  health: healthRoutes,
  feedApi: feedApiRoutes,
  server: serverRoutes,
  user: userRoutes,
  operator: operatorRoutes,
  admin: adminRoutes,
};
