import { isoOf, notFound, unauthenticated } from "@feeds/kit";
import { batchUserItem, operations } from "@feeds/contract";
import type { RouteTable } from "../define.js";
import { runBatch } from "../batch.js";
import type { Clients } from "@feeds/kit";
import { userJson } from "../json.js";

export function userRoutes(r: RouteTable, clients: Pick<Clients, "users">) {

  r.handle(operations.upsertUser, {
    async handler({ params, body, call, reply }) {
      const res = await clients.users.upsertUser({ id: params.id, customJson: JSON.stringify(body.custom) }, call);
      reply.code(res.created ? 201 : 200);
      return userJson(res.user);
    },
  });

  r.handle(operations.getUser, {
    async handler({ params, call }) {
      const res = await clients.users.getUser({ id: params.id }, call);
      return userJson(res.user);
    },
  });

  r.handle(operations.me, {
    async handler({ tenant, call }) {
      if (tenant?.kind !== "user") throw unauthenticated();
      const res = await clients.users.getUser({ id: tenant.userId }, call);
      if (!res.user) throw notFound();
      return userJson(res.user);
    },
  });

  r.handle(operations.revokeTokens, {
    async handler({ params, call }) {
      const res = await clients.users.revokeTokens({ id: params.id }, call);
      return { revoked_before: isoOf(res.revokedBefore) };
    },
  });

  r.handle(operations.batchUsers, {
    batch: true,
    async handler({ body, call }) {
      return runBatch(
        body.users,
        (raw) => {
          const c = batchUserItem.safeParse(raw);
          return c.success ? { id: c.data.id, customJson: JSON.stringify(c.data.custom) } : null;
        },
        async (users) => (await clients.users.importUsers({ users }, call)).results,
        { withId: true },
      );
    },
  });
}
