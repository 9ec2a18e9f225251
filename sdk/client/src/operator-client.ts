import { HttpClient, type CallOptions } from "./http.js";
import { BaseClient, pageQuery, paginate, parseFeedRef, type ClientOptions, type FeedRef } from "./client-base.js";
import type { IterateParams } from "./feed-api-client.js";
import { routeTable } from "@feeds/contract/routes";
import type {
  AdminQueues,
  AdminTenant,
  CreatedTenant,
  CreateTenantInput,
  FeedPage,
  Follow,
  FollowStats,
  InspectorActivity,
  InviteInput,
  InviteResult,
  Operator,
  OperatorSession,
  OperatorSignal,
  Page,
  PageParams,
  SecretResult,
  SignalResult,
  Teammate,
  TeamRole,
  Tenant,
  TestWebhookResult,
  UserListItem,
  WebhookDestination,
  WebhookEventRecord,
} from "@feeds/contract";

const op = routeTable.operator;
const admin = routeTable.admin;

// ---------------------------------------------------------------------------------------------
// Operator client (operator console and platform admin: routes.operator, routes.admin)
// ---------------------------------------------------------------------------------------------

export interface OperatorClientOptions extends ClientOptions {
  /** An existing operator session token; otherwise call `login()` or `acceptInvite()`. */
  token?: string | undefined;
}

/**
 * The operator console's client and the platform admin's (an operator session token, from
 * `login()`, `acceptInvite()` or `{token}`); never a tenant secret.
 */

export class OperatorClient extends BaseClient {
  private sessionToken: string | undefined;

  constructor(options: OperatorClientOptions) {
    super(new HttpClient({ ...options, token: undefined }), options);
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

  // Iterators over paged lists (each follows `next` until the last page)

  /** Every teammate. */
  allTeam(params?: IterateParams, call?: CallOptions): AsyncGenerator<Teammate, void, undefined> {
    return paginate((next) => this.team({ ...params, next }, call));
  }

  /** Every user of the tenant (inspector). */
  allUsers(params?: IterateParams, call?: CallOptions): AsyncGenerator<UserListItem, void, undefined> {
    return paginate((next) => this.inspectUsers({ ...params, next }, call));
  }

  /** Every activity of the tenant, soft-deleted ones included (inspector). */
  allActivities(params?: IterateParams, call?: CallOptions): AsyncGenerator<InspectorActivity, void, undefined> {
    return paginate((next) => this.inspectActivities({ ...params, next }, call));
  }

  /** Every webhook event record. */
  allWebhookEvents(params?: IterateParams, call?: CallOptions): AsyncGenerator<WebhookEventRecord, void, undefined> {
    return paginate((next) => this.webhookEvents({ ...params, next }, call));
  }

  /** Every tenant (staff). */
  allTenants(params?: IterateParams, call?: CallOptions): AsyncGenerator<AdminTenant, void, undefined> {
    return paginate((next) => this.listTenants({ ...params, next }, call));
  }

  // Session

  /** `POST /operator/login`; stores the session token. */
  async login(email: string, password: string, call?: CallOptions): Promise<OperatorSession> {
    const session = await this.route(op.login, { body: { email, password }, call });
    this.sessionToken = session.token;
    return session;
  }

  /** `POST /operator/invite/accept`; stores the session token. */
  async acceptInvite(token: string, password: string, call?: CallOptions): Promise<OperatorSession> {
    const session = await this.route(op.acceptInvite, { body: { token, password }, call });
    this.sessionToken = session.token;
    return session;
  }

  /** `POST /operator/logout` (204); forgets the session token. */
  async logout(call?: CallOptions): Promise<void> {
    try {
      await this.route(op.logout, { call });
    } finally {
      this.sessionToken = undefined;
    }
  }

  /** `GET /operator/me` */
  currentOperator(call?: CallOptions): Promise<Operator> {
    return this.route(op.currentOperator, { call });
  }

  // Tenant and team

  /** `GET /operator/tenant` */
  tenant(call?: CallOptions): Promise<Tenant> {
    return this.route(op.tenant, { call });
  }

  /** `POST /operator/tenant/rotate-secret` (owner) → `{api_secret}`. */
  rotateSecret(call?: CallOptions): Promise<SecretResult> {
    return this.route(op.rotateSecret, { call });
  }

  /** `PUT /operator/tenant/origins` (owner) `{origins}`: replaces the browser origins the tenant allows (CORS). */
  setOrigins(origins: readonly string[], call?: CallOptions): Promise<Tenant> {
    return this.route(op.setOrigins, { body: { origins }, call });
  }

  /** `GET /operator/team` */
  team(params?: PageParams, call?: CallOptions): Promise<Page<Teammate>> {
    return this.route(op.team, { query: pageQuery(params), call });
  }

  /** `POST /operator/team/invite` (owner) → `{teammate, invite_token, expires_at}`. */
  invite(input: InviteInput, call?: CallOptions): Promise<InviteResult> {
    return this.route(op.invite, { body: input, call });
  }

  /** `PATCH /operator/team/{id}` `{role}` (owner). */
  changeRole(id: string, role: TeamRole, call?: CallOptions): Promise<Teammate> {
    return this.route(op.changeRole, { params: { id }, body: { role }, call });
  }

  /** `POST /operator/team/{id}/disable` (owner). */
  disable(id: string, call?: CallOptions): Promise<Teammate> {
    return this.route(op.disable, { params: { id }, call });
  }

  /** `POST /operator/team/{id}/enable` (owner). */
  enable(id: string, call?: CallOptions): Promise<Teammate> {
    return this.route(op.enable, { params: { id }, call });
  }

  // Inspector

  /** `GET /operator/inspect/users` */
  inspectUsers(params?: PageParams, call?: CallOptions): Promise<Page<UserListItem>> {
    return this.route(op.inspectUsers, { query: pageQuery(params), call });
  }

  /** `GET /operator/inspect/activities` (includes soft-deleted, with deleted_at). */
  inspectActivities(params?: PageParams, call?: CallOptions): Promise<Page<InspectorActivity>> {
    return this.route(op.inspectActivities, { query: pageQuery(params), call });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}` */
  inspectFeed(feed: FeedRef, params?: PageParams, call?: CallOptions): Promise<FeedPage> {
    return this.route(op.inspectFeed, { params: parseFeedRef(feed), query: pageQuery(params), call });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/follows` */
  inspectFollows(feed: FeedRef, params?: PageParams, call?: CallOptions): Promise<Page<Follow>> {
    return this.route(op.inspectFollows, { params: parseFeedRef(feed), query: pageQuery(params), call });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/followers` */
  inspectFollowers(feed: FeedRef, params?: PageParams, call?: CallOptions): Promise<Page<Follow>> {
    return this.route(op.inspectFollowers, { params: parseFeedRef(feed), query: pageQuery(params), call });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/stats` */
  inspectStats(feed: FeedRef, call?: CallOptions): Promise<FollowStats> {
    return this.route(op.inspectStats, { params: parseFeedRef(feed), call });
  }

  // Webhooks (operator view)

  /** `GET /operator/webhooks/events` */
  webhookEvents(params?: PageParams, call?: CallOptions): Promise<Page<WebhookEventRecord>> {
    return this.route(op.webhookEvents, { query: pageQuery(params), call });
  }

  /** `GET /operator/webhooks/destinations` (no secrets). */
  webhookDestinations(params?: PageParams, call?: CallOptions): Promise<Page<WebhookDestination>> {
    return this.route(op.webhookDestinations, { query: pageQuery(params), call });
  }

  /** `POST /operator/webhooks/test` (202) → `{published}`. */
  sendTestWebhook(call?: CallOptions): Promise<TestWebhookResult> {
    return this.route(op.sendTestWebhook, { call });
  }

  /** `GET /operator/signal`, conditional on `etag`. */
  signal(options: { etag?: string } = {}, call?: CallOptions): Promise<SignalResult<OperatorSignal>> {
    return this.signalOf(op.signal, { call }, options.etag);
  }

  // Platform admin (staff session)

  /** `GET /admin/tenants` */
  listTenants(params?: PageParams, call?: CallOptions): Promise<Page<AdminTenant>> {
    return this.route(admin.listTenants, { query: pageQuery(params), call });
  }

  /** `POST /admin/tenants` `{name, rate_limit_per_minute?}` → `{tenant, api_secret}`. */
  createTenant(input: CreateTenantInput, call?: CallOptions): Promise<CreatedTenant> {
    return this.route(admin.createTenant, { body: input, call });
  }

  /** `GET /admin/tenants/{id}` */
  getTenant(id: string, call?: CallOptions): Promise<AdminTenant> {
    return this.route(admin.getTenant, { params: { id }, call });
  }

  /** `POST /admin/tenants/{id}/suspend` */
  suspendTenant(id: string, call?: CallOptions): Promise<AdminTenant> {
    return this.route(admin.suspendTenant, { params: { id }, call });
  }

  /** `POST /admin/tenants/{id}/reactivate` */
  reactivateTenant(id: string, call?: CallOptions): Promise<AdminTenant> {
    return this.route(admin.reactivateTenant, { params: { id }, call });
  }

  /** `POST /admin/tenants/{id}/rotate-secret` → `{api_secret}`. */
  rotateTenantSecret(id: string, call?: CallOptions): Promise<SecretResult> {
    return this.route(admin.rotateTenantSecret, { params: { id }, call });
  }

  /** `PUT /admin/tenants/{id}/origins` `{origins}`: replaces a tenant's allowed browser origins (CORS). */
  setTenantOrigins(id: string, origins: readonly string[], call?: CallOptions): Promise<AdminTenant> {
    return this.route(admin.setTenantOrigins, { params: { id }, body: { origins }, call });
  }

  /** `POST /admin/tenants/{id}/operators` `{email, name, role}` → `{teammate, invite_token, expires_at}`. */
  createTenantOperator(id: string, input: InviteInput, call?: CallOptions): Promise<InviteResult> {
    return this.route(admin.createTenantOperator, { params: { id }, body: input, call });
  }

  /** `GET /admin/queues` */
  adminQueues(call?: CallOptions): Promise<AdminQueues> {
    return this.route(admin.adminQueues, { call });
  }
}
