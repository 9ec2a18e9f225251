import type { Clients } from "@feeds/kit";
import { adminTenantSchema, originsBody, tenantIdParams, tenantSchema } from "@feeds/contract";
import type { RouteTable } from "../define.js";
import { operatorTenantJson, tenantJson } from "../json.js";

/**
 * The browser origins a tenant allows (CORS, cors.ts): its owner sets its own, platform staff any
 * tenant's. Each answers once every gateway replica was told (tenancy's change signal).
 */
export function originRoutes(r: RouteTable, clients: Pick<Clients, "tenancy">) {
  r.add({
    method: "PUT",
    url: "/operator/tenant/origins",
    auth: "owner",
    summary: "Replace the browser origins allowed to call with the tenant's tokens (at most 20)",
    tags: ["operator"],
    body: originsBody,
    response: { 200: tenantSchema },
    async handler({ operator, body, call }) {
      const res = await clients.tenancy.setAllowedOrigins({ id: operator?.operator.tenantId ?? "", origins: body.origins }, call);
      return operatorTenantJson(res.tenant);
    },
  });

  r.add({
    method: "PUT",
    url: "/admin/tenants/:id/origins",
    auth: "staff",
    summary: "Replace a tenant's allowed browser origins (at most 20)",
    tags: ["admin"],
    params: tenantIdParams,
    body: originsBody,
    response: { 200: adminTenantSchema },
    async handler({ params, body, call }) {
      return tenantJson((await clients.tenancy.setAllowedOrigins({ id: params.id, origins: body.origins }, call)).tenant);
    },
  });
}
