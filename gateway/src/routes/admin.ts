import { isoOf, queueDepth, queueNames, scope, type Nats } from "@feeds/kit";
import { TenantStatus } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import {
  adminQueuesSchema,
  adminTenantPage,
  adminTenantSchema,
  createdTenantSchema,
  createTenantBody,
  inviteBody,
  inviteResultSchema,
  pageQuery,
  secretSchema,
  tenantIdParams,
} from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import type { Clients } from "@feeds/kit";
import { page, teammateJson, tenantJson } from "../json.js";
import { roleOf } from "./operator.js";

/** Platform administration: platform staff sessions only. */
export function adminRoutes(r: RouteTable, clients: Pick<Clients, "tenancy" | "operators">, nats: Nats) {
  const tags = ["admin"];

  r.add({
    method: "GET",
    url: "/admin/tenants",
    auth: "staff",
    summary: "List tenants, newest first",
    tags,
    query: pageQuery,
    response: { 200: adminTenantPage },
    async handler({ query, call }) {
      const res = await clients.tenancy.listTenants({ page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
      return page(res.tenants.map(tenantJson), res.next);
    },
  });

  r.add({
    method: "POST",
    url: "/admin/tenants",
    auth: "staff",
    status: 201,
    summary: "Create a tenant (answers its api_secret once)",
    tags,
    body: createTenantBody,
    response: { 201: createdTenantSchema },
    async handler({ body, call }) {
      const res = await clients.tenancy.createTenant(
        { name: body.name, rateLimitPerMinute: body.rate_limit_per_minute ?? 0 },
        call,
      );
      return { tenant: tenantJson(res.tenant), api_secret: res.apiSecret };
    },
  });

  r.add({
    method: "GET",
    url: "/admin/tenants/:id",
    auth: "staff",
    summary: "Read a tenant (never its api_secret)",
    tags,
    params: tenantIdParams,
    response: { 200: adminTenantSchema },
    async handler({ params, call }) {
      return tenantJson((await clients.tenancy.getTenant({ id: params.id }, call)).tenant);
    },
  });

  for (const [action, status] of [
    ["suspend", TenantStatus.SUSPENDED],
    ["reactivate", TenantStatus.ACTIVE],
  ] as const) {
    r.add({
      method: "POST",
      url: `/admin/tenants/:id/${action}`,
      auth: "staff",
      summary: `${action === "suspend" ? "Suspend" : "Reactivate"} a tenant (next request, every replica)`,
      tags,
      params: tenantIdParams,
      response: { 200: adminTenantSchema },
      async handler({ params, call }) {
        return tenantJson((await clients.tenancy.setTenantStatus({ id: params.id, status }, call)).tenant);
      },
    });
  }

  r.add({
    method: "POST",
    url: "/admin/tenants/:id/rotate-secret",
    auth: "staff",
    summary: "Rotate a tenant's api secret",
    tags,
    params: tenantIdParams,
    response: { 200: secretSchema },
    async handler({ params, call }) {
      return { api_secret: (await clients.tenancy.rotateSecret({ id: params.id }, call)).apiSecret };
    },
  });

  r.add({
    method: "POST",
    url: "/admin/tenants/:id/operators",
    auth: "staff",
    status: 201,
    summary: "Create a tenant operator with a pending invite",
    tags,
    params: tenantIdParams,
    body: inviteBody,
    response: { 201: inviteResultSchema },
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

  r.add({
    method: "GET",
    url: "/admin/queues",
    auth: "staff",
    summary: "Aggregated queue health",
    tags,
    response: { 200: adminQueuesSchema },
    async handler() {
      return { queues: await Promise.all(queueNames.map((q) => queueDepth(nats, q))) };
    },
  });
}
