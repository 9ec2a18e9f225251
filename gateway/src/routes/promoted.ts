import { notFound } from "@feeds/kit";
import { isPromotedId, operations } from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import type { Clients } from "@feeds/kit";
import { page } from "../json.js";
import { promotedRecordJson } from "../feeds/promoted-sidecar.js";

/** Promoted activities: create, list, retract (server only). */
export function promotedRoutes(r: RouteTable, clients: Pick<Clients, "promoted">) {

  r.handle(operations.createPromoted, {
    async handler({ body, call }) {
      const res = await clients.promoted.createPromoted(
        {
          actor: body.actor,
          verb: body.verb,
          object: body.object,
          customJson: JSON.stringify(body.custom),
          audience: body.audience ? { users: body.audience.users ?? [], feeds: body.audience.feeds ?? [] } : undefined,
        },
        call,
      );
      if (!res.record) throw new Error("the promoted service answered no record");
      return promotedRecordJson(res.record);
    },
  });

  r.handle(operations.listPromoted, {
    async handler({ query, call }) {
      const res = await clients.promoted.listPromoted({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return page(res.records.map(promotedRecordJson), res.next);
    },
  });

  r.handle(operations.retractPromoted, {
    async handler({ params, call }) {
      if (!isPromotedId(params.id)) throw notFound("promoted activity not found");
      await clients.promoted.retractPromoted({ id: params.id.toLowerCase() }, call);
    },
  });
}
