import { createHash } from "node:crypto";
import { unauthenticated, isoOf, type Config } from "@feeds/kit";
import { OperatorStatus, Role } from "@feeds/proto/feeds/identity/v1/identity";
import { operations } from "@feeds/contract";
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

  r.handle(operations.signal, {
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

  r.handle(operations.login, {
    async handler({ req, reply, body, call }) {
      await limitAttempts("login", reply, req.ip, body.email.trim().toLowerCase());
      const res = await clients.operators.login({ email: body.email, password: body.password }, call);
      return sessionJson(res.session);
    },
  });

  r.handle(operations.acceptInvite, {
    async handler({ req, reply, body, call }) {
      await limitAttempts("invite", reply, req.ip, body.token);
      const res = await clients.operators.acceptInvite({ token: body.token, password: body.password }, call);
      return sessionJson(res.session);
    },
  });

  r.handle(operations.logout, {
    async handler({ operator, call }) {
      await clients.operators.logout({ token: operator?.token ?? "" }, call);
      return undefined;
    },
  });

  r.handle(operations.currentOperator, {
    async handler({ operator }) {
      return operatorJson(operator?.operator);
    },
  });

  r.handle(operations.tenant, {
    async handler({ operator, call }) {
      const res = await clients.tenancy.getTenant({ id: operator?.operator.tenantId ?? "" }, call);
      return operatorTenantJson(res.tenant);
    },
  });

  r.handle(operations.rotateSecret, {
    async handler({ operator, call }) {
      const res = await clients.tenancy.rotateSecret({ id: operator?.operator.tenantId ?? "" }, call);
      return { api_secret: res.apiSecret };
    },
  });

  r.handle(operations.team, {
    async handler({ query, call }) {
      const res = await clients.operators.listTeam({ page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
      return page(res.operators.map(teammateJson), res.next);
    },
  });

  r.handle(operations.invite, {
    async handler({ body, call }) {
      const res = await clients.operators.createInvite({ email: body.email, name: body.name, role: roleOf(body.role) }, call);
      return { teammate: teammateJson(res.operator), invite_token: res.inviteToken, expires_at: isoOf(res.expiresAt) };
    },
  });

  r.handle(operations.changeRole, {
    async handler({ params, body, call }) {
      const res = await clients.operators.changeRole({ operatorId: params.id, role: roleOf(body.role) }, call);
      return teammateJson(res.operator);
    },
  });

  for (const [def, status] of [
    [operations.disable, OperatorStatus.DISABLED],
    [operations.enable, OperatorStatus.ACTIVE],
  ] as const) {
    r.handle(def, {
      async handler({ params, call }) {
        const res = await clients.operators.setOperatorStatus({ operatorId: params.id, status }, call);
        return teammateJson(res.operator);
      },
    });
  }

  r.handle(operations.inspectUsers, {
    async handler({ query, call }) {
      const res = await clients.users.listUsers({ page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
      return page(res.users.map(userListJson), res.next);
    },
  });
}
