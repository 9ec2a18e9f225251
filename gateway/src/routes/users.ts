import { isoOf, notFound, unauthenticated } from "@feeds/kit";
import {
  batchResultSchema,
  batchUserItem,
  batchUsersBody,
  revokeTokensSchema,
  upsertUserBody,
  userIdParams,
  userSchema,
} from "@feeds/contract";
import type { RouteTable } from "../define.js";
import { runBatch } from "../batch.js";
import type { Clients } from "@feeds/kit";
import { userJson } from "../json.js";

export function userRoutes(r: RouteTable, clients: Pick<Clients, "users">) {
  const tags = ["users"];

  r.add({
    method: "PUT",
    url: "/v1/users/:id",
    auth: "server",
    summary: "Upsert a user (201 created, 200 updated)",
    tags,
    params: userIdParams,
    body: upsertUserBody,
    response: { 201: userSchema, 200: userSchema },
    async handler({ params, body, call, reply }) {
      const res = await clients.users.upsertUser({ id: params.id, customJson: JSON.stringify(body.custom) }, call);
      reply.code(res.created ? 201 : 200);
      return userJson(res.user);
    },
  });

  r.add({
    method: "GET",
    url: "/v1/users/:id",
    auth: "tenant",
    summary: "Read a user",
    tags,
    params: userIdParams,
    response: { 200: userSchema },
    async handler({ params, call }) {
      const res = await clients.users.getUser({ id: params.id }, call);
      return userJson(res.user);
    },
  });

  r.add({
    method: "GET",
    url: "/v1/me",
    auth: "user",
    summary: "The calling user (404 when no record)",
    tags,
    response: { 200: userSchema },
    async handler({ tenant, call }) {
      if (tenant?.kind !== "user") throw unauthenticated();
      const res = await clients.users.getUser({ id: tenant.userId }, call);
      if (!res.user) throw notFound();
      return userJson(res.user);
    },
  });

  r.add({
    method: "POST",
    url: "/v1/users/:id/revoke-tokens",
    auth: "server",
    summary: "Revoke every token of the user issued before now",
    tags,
    params: userIdParams,
    response: { 200: revokeTokensSchema },
    async handler({ params, call }) {
      const res = await clients.users.revokeTokens({ id: params.id }, call);
      return { revoked_before: isoOf(res.revokedBefore) };
    },
  });

  r.add({
    method: "POST",
    url: "/v1/batch/users",
    auth: "server",
    batch: true,
    summary: "Batch import users (idempotent upsert)",
    tags: ["batch"],
    body: batchUsersBody,
    response: { 200: batchResultSchema },
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
