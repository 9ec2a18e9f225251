import { HttpClient } from "./http.js";
import { BaseClient, pageQuery, parseFeedRef, type ClientOptions, type FeedRef } from "./client-base.js";
import { adminRoutes as admin, operatorRoutes as op } from "@feeds/contract";
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

// ---------------------------------------------------------------------------------------------
// Operator client (operator console and platform admin: routes.operator, routes.admin)
// ---------------------------------------------------------------------------------------------

export interface OperatorClientOptions extends ClientOptions {
  /** An existing operator session token; otherwise call `login()` or `acceptInvite()`. */
  token?: string | undefined;
}

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

  // Session

  /** `POST /operator/login`; stores the session token. */
  async login(email: string, password: string): Promise<OperatorSession> {
    const session = await this.route(op.login, { body: { email, password } });
    this.sessionToken = session.token;
    return session;
  }

  /** `POST /operator/invite/accept`; stores the session token. */
  async acceptInvite(token: string, password: string): Promise<OperatorSession> {
    const session = await this.route(op.acceptInvite, { body: { token, password } });
    this.sessionToken = session.token;
    return session;
  }

  /** `POST /operator/logout` (204); forgets the session token. */
  async logout(): Promise<void> {
    try {
      await this.route(op.logout);
    } finally {
      this.sessionToken = undefined;
    }
  }

  /** `GET /operator/me` */
  currentOperator(): Promise<Operator> {
    return this.route(op.currentOperator);
  }

  // Tenant and team

  /** `GET /operator/tenant` */
  tenant(): Promise<Tenant> {
    return this.route(op.tenant);
  }

  /** `POST /operator/tenant/rotate-secret` (owner) → `{api_secret}`. */
  rotateSecret(): Promise<SecretResult> {
    return this.route(op.rotateSecret);
  }

  /** `PUT /operator/tenant/origins` (owner) `{origins}`: replaces the browser origins the tenant allows (CORS). */
  setOrigins(origins: readonly string[]): Promise<Tenant> {
    return this.route(op.setOrigins, { body: { origins } });
  }

  /** `GET /operator/team` */
  team(params?: PageParams): Promise<Page<Teammate>> {
    return this.route(op.team, { query: pageQuery(params) });
  }

  /** `POST /operator/team/invite` (owner) → `{teammate, invite_token, expires_at}`. */
  invite(input: InviteInput): Promise<InviteResult> {
    return this.route(op.invite, { body: input });
  }

  /** `PATCH /operator/team/{id}` `{role}` (owner). */
  changeRole(id: string, role: TeamRole): Promise<Teammate> {
    return this.route(op.changeRole, { params: { id }, body: { role } });
  }

  /** `POST /operator/team/{id}/disable` (owner). */
  disable(id: string): Promise<Teammate> {
    return this.route(op.disable, { params: { id } });
  }

  /** `POST /operator/team/{id}/enable` (owner). */
  enable(id: string): Promise<Teammate> {
    return this.route(op.enable, { params: { id } });
  }

  // Inspector

  /** `GET /operator/inspect/users` */
  inspectUsers(params?: PageParams): Promise<Page<UserListItem>> {
    return this.route(op.inspectUsers, { query: pageQuery(params) });
  }

  /** `GET /operator/inspect/activities` (includes soft-deleted, with deleted_at). */
  inspectActivities(params?: PageParams): Promise<Page<InspectorActivity>> {
    return this.route(op.inspectActivities, { query: pageQuery(params) });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}` */
  inspectFeed(feed: FeedRef, params?: PageParams): Promise<FeedPage> {
    return this.route(op.inspectFeed, { params: parseFeedRef(feed), query: pageQuery(params) });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/follows` */
  inspectFollows(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.route(op.inspectFollows, { params: parseFeedRef(feed), query: pageQuery(params) });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/followers` */
  inspectFollowers(feed: FeedRef, params?: PageParams): Promise<Page<Follow>> {
    return this.route(op.inspectFollowers, { params: parseFeedRef(feed), query: pageQuery(params) });
  }

  /** `GET /operator/inspect/feeds/{group}/{id}/stats` */
  inspectStats(feed: FeedRef): Promise<FollowStats> {
    return this.route(op.inspectStats, { params: parseFeedRef(feed) });
  }

  // Webhooks (operator view)

  /** `GET /operator/webhooks/events` */
  webhookEvents(params?: PageParams): Promise<Page<WebhookEventRecord>> {
    return this.route(op.webhookEvents, { query: pageQuery(params) });
  }

  /** `GET /operator/webhooks/destinations` (no secrets). */
  webhookDestinations(params?: PageParams): Promise<Page<WebhookDestination>> {
    return this.route(op.webhookDestinations, { query: pageQuery(params) });
  }

  /** `POST /operator/webhooks/test` (202) → `{published}`. */
  sendTestWebhook(): Promise<TestWebhookResult> {
    return this.route(op.sendTestWebhook);
  }

  /** `GET /operator/signal`, conditional on `etag`. */
  signal(options: { etag?: string } = {}): Promise<SignalResult<OperatorSignal>> {
    return this.signalOf(op.signal, {}, options.etag);
  }

  // Platform admin (staff session)

  /** `GET /admin/tenants` */
  listTenants(params?: PageParams): Promise<Page<AdminTenant>> {
    return this.route(admin.listTenants, { query: pageQuery(params) });
  }

  /** `POST /admin/tenants` `{name, rate_limit_per_minute?}` → `{tenant, api_secret}`. */
  createTenant(input: CreateTenantInput): Promise<CreatedTenant> {
    return this.route(admin.createTenant, { body: input });
  }

  /** `GET /admin/tenants/{id}` */
  getTenant(id: string): Promise<AdminTenant> {
    return this.route(admin.getTenant, { params: { id } });
  }

  /** `POST /admin/tenants/{id}/suspend` */
  suspendTenant(id: string): Promise<AdminTenant> {
    return this.route(admin.suspendTenant, { params: { id } });
  }

  /** `POST /admin/tenants/{id}/reactivate` */
  reactivateTenant(id: string): Promise<AdminTenant> {
    return this.route(admin.reactivateTenant, { params: { id } });
  }

  /** `POST /admin/tenants/{id}/rotate-secret` → `{api_secret}`. */
  rotateTenantSecret(id: string): Promise<SecretResult> {
    return this.route(admin.rotateTenantSecret, { params: { id } });
  }

  /** `PUT /admin/tenants/{id}/origins` `{origins}`: replaces a tenant's allowed browser origins (CORS). */
  setTenantOrigins(id: string, origins: readonly string[]): Promise<AdminTenant> {
    return this.route(admin.setTenantOrigins, { params: { id }, body: { origins } });
  }

  /** `POST /admin/tenants/{id}/operators` `{email, name, role}` → `{teammate, invite_token, expires_at}`. */
  createTenantOperator(id: string, input: InviteInput): Promise<InviteResult> {
    return this.route(admin.createTenantOperator, { params: { id }, body: input });
  }

  /** `GET /admin/queues` */
  adminQueues(): Promise<AdminQueues> {
    return this.route(admin.adminQueues);
  }
}
