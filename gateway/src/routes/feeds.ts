import { forbidden, notFound, toTimestamp, validationFailed } from "@feeds/kit";
import { isActivityId, operations } from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import { activityJson, actorUserJson } from "../feeds/activity-json.js";
import { enrich, enrichOne, feedPage, operatorViewer, viewerOf, type FeedPageClients } from "../feeds/enrich.js";

/** User tokens: `time` is clamped to [now − 10 min, now] (interface rule 5). */
const USER_TIME_WINDOW_MS = 10 * 60 * 1000;

function clampUserTime(time: Date, now = Date.now()): Date {
  return new Date(Math.min(now, Math.max(now - USER_TIME_WINDOW_MS, time.getTime())));
}

/** Activity ids are UUIDs: any other id names no activity (404, no service call). */
function activityId(id: string): string {
  if (!isActivityId(id)) throw notFound("activity not found");
  return id.toLowerCase();
}

/** `If-None-Match` holds the current ETag (a list, weak forms, or `*`)? */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(",").some((t) => {
    const tag = t.trim().replace(/^W\//, "");
    return tag === "*" || tag === etag;
  });
}

/** Activities and feed reads. */
export function feedRoutes(r: RouteTable, clients: FeedPageClients) {

  r.handle(operations.addActivity, {
    async handler({ params, body, tenant, call }) {
      let actor: string;
      let time = body.time ? new Date(body.time) : undefined;
      if (tenant?.kind === "user") {
        // User tokens: only their own feed (any group), actor overwritten, time clamped.
        if (params.id !== tenant.userId) throw forbidden("a user token may write only to its own feed");
        actor = `user:${tenant.userId}`;
        if (time) time = clampUserTime(time);
      } else {
        if (!body.actor) throw validationFailed([{ path: "actor", message: "required for server tokens" }]);
        actor = body.actor;
      }
      const res = await clients.feed.addActivity(
        {
          feed: { group: params.group, id: params.id },
          activity: {
            actor,
            verb: body.verb,
            object: body.object,
            target: body.target ?? undefined,
            foreignId: body.foreign_id ?? undefined,
            time: time ? toTimestamp(time) : undefined,
            customJson: JSON.stringify(body.custom),
            refs: body.refs,
          },
        },
        call,
      );
      // The feed service looked the actor's user up for its warnings: actor_user comes from its
      // answer. A new activity has no reactions yet, so a user token's own_reactions is empty
      // without asking; a live duplicate (an existing activity) is enriched as any read.
      const viewer = viewerOf(tenant);
      const activity =
        res.created && res.activity
          ? activityJson(res.activity, {
              actorUser: res.actorUser ? actorUserJson(res.actorUser) : null,
              ownReactions: viewer.userId === null ? undefined : [],
            })
          : await enrichOne(clients, call, res.activity, viewer);
      return res.warnings.length ? { ...activity, warnings: res.warnings } : activity;
    },
  });

  r.handle(operations.readFeed, {
    async handler({ params, query, tenant, call }) {
      return feedPage(clients, call, params, query, viewerOf(tenant));
    },
  });

  r.handle(operations.feedSignal, {
    async handler({ req, reply, params, call }) {
      const res = await clients.feed.getSignal({ feed: { group: params.group, id: params.id } }, call);
      const etag = `"${res.version}"`;
      reply.header("etag", etag).header("cache-control", "no-cache");
      if (matchesEtag(req.headers["if-none-match"], etag)) {
        reply.code(304);
        return undefined;
      }
      return { feed: `${params.group}:${params.id}`, version: Number(res.version), head: res.head || null };
    },
  });

  r.handle(operations.getActivity, {
    async handler({ params, tenant, call }) {
      const res = await clients.feed.getActivity({ id: activityId(params.id) }, call);
      return enrichOne(clients, call, res.activity, viewerOf(tenant));
    },
  });

  r.handle(operations.patchActivity, {
    async handler({ params, body, tenant, call }) {
      const res = await clients.feed.patchActivity(
        {
          id: activityId(params.id),
          setJson: JSON.stringify(body.set ?? {}),
          unset: body.unset ?? [],
          hasRefs: body.refs !== undefined,
          refs: body.refs ?? [],
        },
        call,
      );
      return enrichOne(clients, call, res.activity, viewerOf(tenant));
    },
  });

  r.handle(operations.deleteActivity, {
    async handler({ params, call }) {
      await clients.feed.deleteActivity({ id: activityId(params.id) }, call);
      return undefined;
    },
  });

  r.handle(operations.inspectFeed, {
    async handler({ params, query, call }) {
      return feedPage(clients, call, params, query, operatorViewer);
    },
  });

  r.handle(operations.inspectActivities, {
    async handler({ query, call }) {
      const res = await clients.feed.listActivities({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      const { results } = await enrich(clients, call, res.activities, { ...operatorViewer, deletedAt: true });
      return { results, next: res.next || null };
    },
  });
}
