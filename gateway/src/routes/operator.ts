import { createHash } from "node:crypto";
import { unauthenticated, isoOf, type Config } from "@feeds/kit";
import { OperatorStatus, Role } from "@feeds/proto/feeds/identity/v1/identity";
import {
  acceptInviteBody,
  inviteBody,
  inviteResultSchema,
  loginBody,
  operatorIdParams,
  operatorSchema,
  operatorSessionSchema,
  operatorSignalSchema,
  pageQuery,
  roleBody,
  secretSchema,
  teammatePage,
  teammateSchema,
  tenantSchema,
  userListPage,
} from "@feeds/contract";
import type { FastifyReply } from "fastify";
import { addressBucket } from "../client-address.js";
import { cursorOf, rateHeaders, type RouteTable } from "../define.js";
import type { Clients } from "@feeds/kit";
import type { RateLimiter } from "../rate-limit.js";
import { matchesEtag } from "./feeds.js";
import { operatorJson, operatorTenantJson, page, teammateJson, userListJson } from "../json.js";

const sessionJson = (s: { token: string; expiresAt?: { seconds: bigint; nanos: number }; operator?: Parameters<typeof operatorJson>[0] } | undefined) => {
  if (!s) throw unauthenticated();
  return { token: s.token, expires_at: isoOf(s.expiresAt as never), operator: operatorJson(s.operator) };
};

export const roleOf = (role: "owner" | "member") => (role === "owner" ? Role.OWNER : Role.MEMBER);

export function operatorRoutes(
  r: RouteTable,
  clients: Pick<Clients, "tenancy" | "operators" | "users" | "feed" | "webhooks">,
  limiter: RateLimiter,
  config: Config,
) {
  const tags = ["operator"];
  const loginLimit = config.LOGIN_RATE_LIMIT_PER_MINUTE;

  /**
   * Login and invite acceptance: at most N attempts per minute per client address (IPv6: per
   * /64) and per name; the answer says where the caller stands (RateLimit-* headers).
   */
  async function limitAttempts(kind: "login" | "invite", reply: FastifyReply, ip: string, name: string) {
    const { count, window } = await limiter.hit(kind, [`ip:${addressBucket(ip)}`, `id:${createHash("sha256").update(name).digest("hex")}`]);
    rateHeaders(reply, { limit: loginLimit, remaining: Math.max(0, loginLimit - count), reset: window.retryAfter });
    if (count > loginLimit) throw limiter.refusal(kind, window);
  }

  r.add({
    method: "GET",
    url: "/operator/signal",
    auth: "member",
    summary: "Cheap change signal for the console's live tables (ETag; If-None-Match answers 304)",
    tags,
    response: { 200: operatorSignalSchema, 304: null },
    async handler({ req, reply, call }) {
      // Each service answers its own count and version from Redis: no database query per call.
      const [activities, users, events] = await Promise.all([
        clients.feed.getActivitySignal({}, call),
        clients.users.getUserSignal({}, call),
        clients.webhooks.getEventSignal({}, call),
      ]);
      // Each version only moves forward, so their sum does too: any change moves it.
      const version = Number(activities.version + users.version + events.version);
      const counts = { activities: Number(activities.count), users: Number(users.count), webhook_events: Number(events.count) };
      const etag = `"${version}-${counts.activities}-${counts.users}-${counts.webhook_events}"`;
      reply.header("etag", etag).header("cache-control", "no-cache");
      if (matchesEtag(req.headers["if-none-match"], etag)) {
        reply.code(304);
        return undefined;
      }
      return { version, counts };
    },
  });

  r.add({
    method: "POST",
    url: "/operator/login",
    auth: "none",
    summary: "Log in (all credential failures answer one identical 401)",
    tags,
    body: loginBody,
    response: { 200: operatorSessionSchema },
    async handler({ req, reply, body, call }) {
      await limitAttempts("login", reply, req.ip, body.email.trim().toLowerCase());
      const res = await clients.operators.login({ email: body.email, password: body.password }, call);
      return sessionJson(res.session);
    },
  });

  r.add({
    method: "POST",
    url: "/operator/invite/accept",
    auth: "none",
    summary: "Accept an invite (single use) and set a password",
    tags,
    body: acceptInviteBody,
    response: { 200: operatorSessionSchema },
    async handler({ req, reply, body, call }) {
      await limitAttempts("invite", reply, req.ip, body.token);
      const res = await clients.operators.acceptInvite({ token: body.token, password: body.password }, call);
      return sessionJson(res.session);
    },
  });

  r.add({
    method: "POST",
    url: "/operator/logout",
    auth: "operator",
    status: 204,
    summary: "End the calling session",
    tags,
    response: { 204: null },
    async handler({ operator, call }) {
      await clients.operators.logout({ token: operator?.token ?? "" }, call);
      return undefined;
    },
  });

  r.add({
    method: "GET",
    url: "/operator/me",
    auth: "operator",
    summary: "The calling operator",
    tags,
    response: { 200: operatorSchema },
    async handler({ operator }) {
      return operatorJson(operator?.operator);
    },
  });

  r.add({
    method: "GET",
    url: "/operator/tenant",
    auth: "member",
    summary: "The operator's own tenant",
    tags,
    response: { 200: tenantSchema },
    async handler({ operator, call }) {
      const res = await clients.tenancy.getTenant({ id: operator?.operator.tenantId ?? "" }, call);
      return operatorTenantJson(res.tenant);
    },
  });

  r.add({
    method: "POST",
    url: "/operator/tenant/rotate-secret",
    auth: "owner",
    summary: "Rotate the tenant's api secret (the old one stops at once)",
    tags,
    response: { 200: secretSchema },
    async handler({ operator, call }) {
      const res = await clients.tenancy.rotateSecret({ id: operator?.operator.tenantId ?? "" }, call);
      return { api_secret: res.apiSecret };
    },
  });

  r.add({
    method: "GET",
    url: "/operator/team",
    auth: "member",
    summary: "Operators on the caller's tenant",
    tags,
    query: pageQuery,
    response: { 200: teammatePage },
    async handler({ query, call }) {
      const res = await clients.operators.listTeam({ page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
      return page(res.operators.map(teammateJson), res.next);
    },
  });

  r.add({
    method: "POST",
    url: "/operator/team/invite",
    auth: "owner",
    status: 201,
    summary: "Invite a teammate (owner)",
    tags,
    body: inviteBody,
    response: { 201: inviteResultSchema },
    async handler({ body, call }) {
      const res = await clients.operators.createInvite({ email: body.email, name: body.name, role: roleOf(body.role) }, call);
      return { teammate: teammateJson(res.operator), invite_token: res.inviteToken, expires_at: isoOf(res.expiresAt) };
    },
  });

  r.add({
    method: "PATCH",
    url: "/operator/team/:id",
    auth: "owner",
    summary: "Change a teammate's role (owner)",
    tags,
    params: operatorIdParams,
    body: roleBody,
    response: { 200: teammateSchema },
    async handler({ params, body, call }) {
      const res = await clients.operators.changeRole({ operatorId: params.id, role: roleOf(body.role) }, call);
      return teammateJson(res.operator);
    },
  });

  for (const [action, status] of [
    ["disable", OperatorStatus.DISABLED],
    ["enable", OperatorStatus.ACTIVE],
  ] as const) {
    r.add({
      method: "POST",
      url: `/operator/team/:id/${action}`,
      auth: "owner",
      summary: `${action === "disable" ? "Disable" : "Re-enable"} a teammate (owner)`,
      tags,
      params: operatorIdParams,
      response: { 200: teammateSchema },
      async handler({ params, call }) {
        const res = await clients.operators.setOperatorStatus({ operatorId: params.id, status }, call);
        return teammateJson(res.operator);
      },
    });
  }

  r.add({
    method: "GET",
    url: "/operator/inspect/users",
    auth: "member",
    summary: "Inspector: the tenant's users, newest first",
    tags,
    query: pageQuery,
    response: { 200: userListPage },
    async handler({ query, call }) {
      const res = await clients.users.listUsers({ page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
      return page(res.users.map(userListJson), res.next);
    },
  });
}
