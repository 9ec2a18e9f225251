import { notFound } from "@feeds/kit";
import {
  createPromotedBody,
  isPromotedId,
  promotedIdParams,
  promotedPageQuery,
  promotedRecordPage,
  promotedRecordSchema,
} from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import type { Clients } from "@feeds/kit";
import { page } from "../json.js";
import { promotedRecordJson } from "../feeds/promoted-sidecar.js";

/** Promoted activities: create, list, retract (server only). */
export function promotedRoutes(r: RouteTable, clients: Pick<Clients, "promoted">) {
  const tags = ["promoted"];

  r.add({
    method: "POST",
    url: "/v1/promoted",
    auth: "server",
    status: 201,
    summary: "Create a promoted activity (delivered beside first-page feed reads, never fanned out)",
    tags,
    body: createPromotedBody,
    response: { 201: promotedRecordSchema },
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

  r.add({
    method: "GET",
    url: "/v1/promoted",
    auth: "server",
    summary: "List the tenant's promoted activities, newest first, retracted ones included, with served_count",
    tags,
    query: promotedPageQuery,
    response: { 200: promotedRecordPage },
    async handler({ query, call }) {
      const res = await clients.promoted.listPromoted({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return page(res.records.map(promotedRecordJson), res.next);
    },
  });

  r.add({
    method: "DELETE",
    url: "/v1/promoted/:id",
    auth: "server",
    status: 204,
    summary: "Retract a promoted activity (soft delete; 404 when missing or already retracted)",
    tags,
    params: promotedIdParams,
    response: { 204: null },
    async handler({ params, call }) {
      if (!isPromotedId(params.id)) throw notFound("promoted activity not found");
      await clients.promoted.retractPromoted({ id: params.id.toLowerCase() }, call);
    },
  });
}
