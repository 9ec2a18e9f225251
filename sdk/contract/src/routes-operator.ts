import { route } from "./route-def.js";
import { adminOriginRoutes, operatorOriginRoutes } from "./routes-origins.js";
import { acceptInviteBody, createTenantBody, inviteBody, loginBody, operatorIdParams, pageQuery, roleBody, tenantIdParams } from "./schemas.js";
import { feedPageQuery, feedParams } from "./schemas-feeds.js";
import { graphFeedParams } from "./schemas-graph.js";
import { webhookPageQuery } from "./schemas-webhooks.js";
import { adminQueuesSchema } from "./responses.js";
import { feedPageSchema, followPage, followStatsSchema, inspectorActivityPage } from "./responses-feeds.js";
import { testWebhookSchema, webhookDestinationPage, webhookEventRecordPage } from "./responses-webhooks.js";
import {
  adminTenantPage,
  adminTenantSchema,
  createdTenantSchema,
  inviteResultSchema,
  operatorSchema,
  operatorSessionSchema,
  operatorSignalSchema,
  secretSchema,
  teammatePage,
  teammateSchema,
  tenantSchema,
  userListPage,
} from "./responses-operator.js";

// The operator console's routes and platform administration's: OperatorClient.

const team = "/operator/team/{id}";
const inspectFeed = "/operator/inspect/feeds/{group}/{id}";

export const operatorRoutes = {
  login: route({ method: "POST", path: "/operator/login", auth: "none", body: loginBody, responses: { 200: operatorSessionSchema } }),
  acceptInvite: route({
    method: "POST",
    path: "/operator/invite/accept",
    auth: "none",
    body: acceptInviteBody,
    responses: { 200: operatorSessionSchema },
  }),
  logout: route({ method: "POST", path: "/operator/logout", auth: "operator", responses: { 204: null } }),
  me: route({ method: "GET", path: "/operator/me", auth: "operator", responses: { 200: operatorSchema } }),
  tenant: route({ method: "GET", path: "/operator/tenant", auth: "member", responses: { 200: tenantSchema } }),
  rotateSecret: route({ method: "POST", path: "/operator/tenant/rotate-secret", auth: "owner", responses: { 200: secretSchema } }),
  team: route({ method: "GET", path: "/operator/team", auth: "member", query: pageQuery, responses: { 200: teammatePage } }),
  invite: route({ method: "POST", path: "/operator/team/invite", auth: "owner", body: inviteBody, responses: { 201: inviteResultSchema } }),
  changeRole: route({ method: "PATCH", path: team, auth: "owner", params: operatorIdParams, body: roleBody, responses: { 200: teammateSchema } }),
  disable: route({ method: "POST", path: `${team}/disable`, auth: "owner", params: operatorIdParams, responses: { 200: teammateSchema } }),
  enable: route({ method: "POST", path: `${team}/enable`, auth: "owner", params: operatorIdParams, responses: { 200: teammateSchema } }),
  inspectUsers: route({ method: "GET", path: "/operator/inspect/users", auth: "member", query: pageQuery, responses: { 200: userListPage } }),
  inspectActivities: route({
    method: "GET",
    path: "/operator/inspect/activities",
    auth: "member",
    query: feedPageQuery,
    responses: { 200: inspectorActivityPage },
  }),
  inspectFeed: route({
    method: "GET",
    path: inspectFeed,
    auth: "member",
    params: feedParams,
    query: feedPageQuery,
    responses: { 200: feedPageSchema },
  }),
  inspectFollows: route({
    method: "GET",
    path: `${inspectFeed}/follows`,
    auth: "member",
    params: graphFeedParams,
    query: pageQuery,
    responses: { 200: followPage },
  }),
  inspectFollowers: route({
    method: "GET",
    path: `${inspectFeed}/followers`,
    auth: "member",
    params: graphFeedParams,
    query: pageQuery,
    responses: { 200: followPage },
  }),
  inspectStats: route({
    method: "GET",
    path: `${inspectFeed}/stats`,
    auth: "member",
    params: graphFeedParams,
    responses: { 200: followStatsSchema },
  }),
  webhookEvents: route({
    method: "GET",
    path: "/operator/webhooks/events",
    auth: "member",
    query: webhookPageQuery,
    responses: { 200: webhookEventRecordPage },
  }),
  webhookDestinations: route({
    method: "GET",
    path: "/operator/webhooks/destinations",
    auth: "member",
    query: webhookPageQuery,
    responses: { 200: webhookDestinationPage },
  }),
  sendTestWebhook: route({ method: "POST", path: "/operator/webhooks/test", auth: "member", responses: { 202: testWebhookSchema } }),
  signal: route({ method: "GET", path: "/operator/signal", auth: "member", responses: { 200: operatorSignalSchema, 304: null } }),
  ...operatorOriginRoutes,
};

const tenant = "/admin/tenants/{id}";

export const adminRoutes = {
  listTenants: route({ method: "GET", path: "/admin/tenants", auth: "staff", query: pageQuery, responses: { 200: adminTenantPage } }),
  createTenant: route({ method: "POST", path: "/admin/tenants", auth: "staff", body: createTenantBody, responses: { 201: createdTenantSchema } }),
  getTenant: route({ method: "GET", path: tenant, auth: "staff", params: tenantIdParams, responses: { 200: adminTenantSchema } }),
  suspendTenant: route({ method: "POST", path: `${tenant}/suspend`, auth: "staff", params: tenantIdParams, responses: { 200: adminTenantSchema } }),
  reactivateTenant: route({
    method: "POST",
    path: `${tenant}/reactivate`,
    auth: "staff",
    params: tenantIdParams,
    responses: { 200: adminTenantSchema },
  }),
  rotateTenantSecret: route({
    method: "POST",
    path: `${tenant}/rotate-secret`,
    auth: "staff",
    params: tenantIdParams,
    responses: { 200: secretSchema },
  }),
  createTenantOperator: route({
    method: "POST",
    path: `${tenant}/operators`,
    auth: "staff",
    params: tenantIdParams,
    body: inviteBody,
    responses: { 201: inviteResultSchema },
  }),
  adminQueues: route({ method: "GET", path: "/admin/queues", auth: "staff", responses: { 200: adminQueuesSchema } }),
  ...adminOriginRoutes,
};
