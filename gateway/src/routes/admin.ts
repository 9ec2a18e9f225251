import { isoOf, queueDepth, queueNames, scope, type Nats } from "@feeds/kit";
import { TenantStatus } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { operations } from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import type { Clients } from "@feeds/kit";
import { page, teammateJson, tenantJson } from "../json.js";
import { roleOf } from "./operator.js";

/** Platform administration: platform staff sessions only. */
export function adminRoutes(r: RouteTable, clients: Pick<Clients, "tenancy" | "operators">, nats: Nats) {

  r.handle(operations.listTenants, {
    async handler({ query, call }) {
      const res = await clients.tenancy.listTenants({ page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
      return page(res.tenants.map(tenantJson), res.next);
    },
  });

  r.handle(operations.createTenant, {
    async handler({ body, call }) {
      const res = await clients.tenancy.createTenant(
        { name: body.name, rateLimitPerMinute: body.rate_limit_per_minute ?? 0 },
        call,
      );
      return { tenant: tenantJson(res.tenant), api_secret: res.apiSecret };
    },
  });

  r.handle(operations.getTenant, {
    async handler({ params, call }) {
      return tenantJson((await clients.tenancy.getTenant({ id: params.id }, call)).tenant);
    },
  });

  for (const [def, status] of [
    [operations.suspendTenant, TenantStatus.SUSPENDED],
    [operations.reactivateTenant, TenantStatus.ACTIVE],
  ] as const) {
    r.handle(def, {
      async handler({ params, call }) {
        return tenantJson((await clients.tenancy.setTenantStatus({ id: params.id, status }, call)).tenant);
      },
    });
  }

  r.handle(operations.rotateTenantSecret, {
    async handler({ params, call }) {
      return { api_secret: (await clients.tenancy.rotateSecret({ id: params.id }, call)).apiSecret };
    },
  });

  r.handle(operations.createTenantOperator, {
    async handler({ params, body, req, operator }) {
      // The tenant must exist; the operator is created on it by platform staff.
      const call = scope({
        tenantId: params.id,
        caller: { kind: "operator", operatorId: operator?.operator.id ?? "" },
        requestId: req.id,
      });
      await clients.tenancy.getTenant({ id: params.id }, call);
      const res = await clients.operators.createInvite({ email: body.email, name: body.name, role: roleOf(body.role) }, call);
      return { teammate: teammateJson(res.operator), invite_token: res.inviteToken, expires_at: isoOf(res.expiresAt) };
    },
  });

  r.handle(operations.adminQueues, {
    async handler() {
      return { queues: await Promise.all(queueNames.map((q) => queueDepth(nats, q))) };
    },
  });
}
