import type { Clients } from "@feeds/kit";
import { operations } from "@feeds/contract";
import type { RouteTable } from "../define.js";
import { operatorTenantJson, tenantJson } from "../json.js";

/**
 * The browser origins a tenant allows (CORS, cors.ts): its owner sets its own, platform staff any
 * tenant's. Each answers once every gateway replica was told (tenancy's change signal).
 */
export function originRoutes(r: RouteTable, clients: Pick<Clients, "tenancy">) {
  r.handle(operations.setOrigins, {
    async handler({ operator, body, call }) {
      const res = await clients.tenancy.setAllowedOrigins({ id: operator?.operator.tenantId ?? "", origins: body.origins }, call);
      return operatorTenantJson(res.tenant);
    },
  });

  r.handle(operations.setTenantOrigins, {
    async handler({ params, body, call }) {
      return tenantJson((await clients.tenancy.setAllowedOrigins({ id: params.id, origins: body.origins }, call)).tenant);
    },
  });
}
