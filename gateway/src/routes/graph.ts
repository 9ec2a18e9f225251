import { isoOf } from "@feeds/kit";
import type { Follow } from "@feeds/proto/feeds/graph/v1/graph";
import {
  batchFollowItem,
  batchFollowsBody,
  batchResultSchema,
  followBody,
  followPage,
  followSchema,
  followStatsSchema,
  graphFeedParams,
  pageQuery,
  suggestionsQuery,
  suggestionsSchema,
  unfollowParams,
  unfollowQuery,
} from "@feeds/contract";
import { cursorOf, type AuthKind, type RouteTable } from "../define.js";
import { runBatch } from "../batch.js";
import type { Clients } from "@feeds/kit";
import { page } from "../json.js";
import { followWeight, suggestionsWeight } from "../rate-weights.js";

/** The interface's Follow resource. */
const followJson = (f: Follow) => ({
  source_group: f.source?.group ?? "",
  source_id: f.source?.id ?? "",
  target_group: f.target?.group ?? "",
  target_id: f.target?.id ?? "",
  created_at: isoOf(f.createdAt),
});

/** Follow, unfollow, follows, followers, stats, suggestions and batch follows. */
export function graphRoutes(r: RouteTable, clients: Pick<Clients, "graph">) {
  const tags = ["follows"];

  r.add({
    method: "POST",
    url: "/v1/feeds/:group/:id/follows",
    weight: followWeight,
    auth: "tenant",
    status: 201,
    summary: "Follow a target feed (201 new edge, 200 existing edge; user tokens only from their own feeds)",
    tags,
    params: graphFeedParams,
    body: followBody,
    response: { 201: followSchema, 200: followSchema },
    async handler({ params, body, call, reply }) {
      const source = { group: params.group, id: params.id };
      // The graph records the history copy with the edge and completes it from its outbox.
      const res = await clients.graph.follow({ source, target: body.target, activityCopyLimit: body.activity_copy_limit }, call);
      reply.code(res.created ? 201 : 200);
      return res.follow && followJson(res.follow);
    },
  });

  r.add({
    method: "DELETE",
    url: "/v1/feeds/:group/:id/follows/:target_group/:target_id",
    auth: "tenant",
    status: 204,
    summary: "Unfollow a target feed (204, also when there was no edge; keep_history=true keeps copied activities)",
    tags,
    params: unfollowParams,
    query: unfollowQuery,
    response: { 204: null },
    async handler({ params, query, call }) {
      const source = { group: params.group, id: params.id };
      const target = { group: params.target_group, id: params.target_id };
      // The graph records the history removal with the edge change and completes it from its outbox.
      await clients.graph.unfollow({ source, target, keepHistory: query.keep_history === "true" }, call);
      return undefined;
    },
  });

  // The same reads for tenant tokens (open within the tenant) and for the operator console.
  for (const [prefix, auth, who] of [
    ["/v1/feeds", "tenant", ""],
    ["/operator/inspect/feeds", "member", "Inspector: "],
  ] as const satisfies readonly (readonly [string, AuthKind, string])[]) {
    const readTags = auth === "member" ? ["operator"] : tags;

    r.add({
      method: "GET",
      url: `${prefix}/:group/:id/follows`,
      auth,
      summary: `${who}Who this feed follows, newest first`,
      tags: readTags,
      params: graphFeedParams,
      query: pageQuery,
      response: { 200: followPage },
      async handler({ params, query, call }) {
        const res = await clients.graph.listFollows({ feed: params, page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
        return page(res.follows.map(followJson), res.next);
      },
    });

    r.add({
      method: "GET",
      url: `${prefix}/:group/:id/followers`,
      auth,
      summary: `${who}Who follows this feed, newest first`,
      tags: readTags,
      params: graphFeedParams,
      query: pageQuery,
      response: { 200: followPage },
      async handler({ params, query, call }) {
        const res = await clients.graph.listFollowers({ feed: params, page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
        return page(res.follows.map(followJson), res.next);
      },
    });

    r.add({
      method: "GET",
      url: `${prefix}/:group/:id/stats`,
      auth,
      summary: `${who}Follower and following counts of a feed`,
      tags: readTags,
      params: graphFeedParams,
      response: { 200: followStatsSchema },
      async handler({ params, call }) {
        const res = await clients.graph.getStats({ feed: params }, call);
        return {
          feed: `${params.group}:${params.id}`,
          follower_count: Number(res.followerCount),
          following_count: Number(res.followingCount),
        };
      },
    });
  }

  r.add({
    method: "GET",
    url: "/v1/feeds/:group/:id/suggestions",
    weight: suggestionsWeight,
    auth: "tenant",
    summary: "Follow suggestions: user feeds by mutual overlap, topped up by popularity (not paged)",
    tags,
    params: graphFeedParams,
    query: suggestionsQuery,
    response: { 200: suggestionsSchema },
    async handler({ params, query, call }) {
      const res = await clients.graph.suggestions({ feed: params, limit: query.limit ?? 25 }, call);
      return { results: res.suggestions.map((s) => ({ group: s.group, id: s.id, mutuals: Number(s.mutuals) })) };
    },
  });

  r.add({
    method: "POST",
    url: "/v1/batch/follows",
    auth: "server",
    batch: true,
    summary: "Batch import follows (quiet; a duplicate edge is ok)",
    tags: ["batch"],
    body: batchFollowsBody,
    response: { 200: batchResultSchema },
    async handler({ body, call }) {
      return runBatch(
        body.follows,
        (raw) => {
          const c = batchFollowItem.safeParse(raw);
          return c.success ? { source: c.data.source, target: c.data.target } : null;
        },
        async (follows) => (await clients.graph.importFollows({ follows }, call)).results.map((r) => ({ ...r, id: "" })),
      );
    },
  });
}
