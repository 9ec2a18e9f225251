import { isoOf } from "@feeds/kit";
import type { Follow } from "@feeds/proto/feeds/graph/v1/graph";
import { batchFollowItem, operations } from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
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

  r.handle(operations.follow, {
    weight: followWeight,
    async handler({ params, body, call, reply }) {
      const source = { group: params.group, id: params.id };
      // The graph records the history copy with the edge and completes it from its outbox.
      const res = await clients.graph.follow({ source, target: body.target, activityCopyLimit: body.activity_copy_limit }, call);
      reply.code(res.created ? 201 : 200);
      return res.follow && followJson(res.follow);
    },
  });

  r.handle(operations.unfollow, {
    async handler({ params, query, call }) {
      const source = { group: params.group, id: params.id };
      const target = { group: params.target_group, id: params.target_id };
      // The graph records the history removal with the edge change and completes it from its outbox.
      await clients.graph.unfollow({ source, target, keepHistory: query.keep_history === "true" }, call);
      return undefined;
    },
  });

  // The same reads for tenant tokens (open within the tenant) and for the operator console.
  for (const [follows, followers, stats] of [
    [operations.follows, operations.followers, operations.stats],
    [operations.inspectFollows, operations.inspectFollowers, operations.inspectStats],
  ] as const) {

    r.handle(follows, {
      async handler({ params, query, call }) {
        const res = await clients.graph.listFollows({ feed: params, page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
        return page(res.follows.map(followJson), res.next);
      },
    });

    r.handle(followers, {
      async handler({ params, query, call }) {
        const res = await clients.graph.listFollowers({ feed: params, page: { limit: query.limit ?? 20, cursor: cursorOf(query) } }, call);
        return page(res.follows.map(followJson), res.next);
      },
    });

    r.handle(stats, {
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

  r.handle(operations.suggestions, {
    weight: suggestionsWeight,
    async handler({ params, query, call }) {
      const res = await clients.graph.suggestions({ feed: params, limit: query.limit ?? 25 }, call);
      return { results: res.suggestions.map((s) => ({ group: s.group, id: s.id, mutuals: Number(s.mutuals) })) };
    },
  });

  r.handle(operations.batchFollows, {
    batch: true,
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
