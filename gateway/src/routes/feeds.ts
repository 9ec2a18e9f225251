import { forbidden, notFound, toTimestamp, validationFailed } from "@feeds/kit";
import {
  activityIdParams,
  activitySchema,
  addActivityBody,
  addedActivitySchema,
  feedPageQuery,
  feedPageSchema,
  feedParams,
  feedSignalSchema,
  inspectorActivityPage,
  isActivityId,
  patchActivityBody,
} from "@feeds/contract";
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
  const tags = ["feeds"];

  r.add({
    method: "POST",
    url: "/v1/feeds/:group/:id/activities",
    auth: "tenant",
    status: 201,
    summary: "Add an activity (a live duplicate foreign_id+time answers 201 with the existing one)",
    tags,
    params: feedParams,
    body: addActivityBody,
    response: { 201: addedActivitySchema },
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

  r.add({
    method: "GET",
    url: "/v1/feeds/:group/:id",
    auth: "tenant",
    summary: "Read a feed, newest first, with actor_user and the objects sidecar",
    tags,
    params: feedParams,
    query: feedPageQuery,
    response: { 200: feedPageSchema },
    async handler({ params, query, tenant, call }) {
      return feedPage(clients, call, params, query, viewerOf(tenant));
    },
  });

  r.add({
    method: "GET",
    url: "/v1/feeds/:group/:id/signal",
    auth: "tenant",
    summary: "Cheap change signal for a feed (ETag; If-None-Match answers 304)",
    tags,
    params: feedParams,
    response: { 200: feedSignalSchema, 304: null },
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

  r.add({
    method: "GET",
    url: "/v1/activities/:id",
    auth: "tenant",
    summary: "Read one activity (404 when missing or deleted)",
    tags,
    params: activityIdParams,
    response: { 200: activitySchema },
    async handler({ params, tenant, call }) {
      const res = await clients.feed.getActivity({ id: activityId(params.id) }, call);
      return enrichOne(clients, call, res.activity, viewerOf(tenant));
    },
  });

  r.add({
    method: "PATCH",
    url: "/v1/activities/:id",
    auth: "tenant",
    summary: "Patch an activity's custom (paths under custom.) and/or refs",
    tags,
    params: activityIdParams,
    body: patchActivityBody,
    response: { 200: activitySchema },
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

  r.add({
    method: "DELETE",
    url: "/v1/activities/:id",
    auth: "tenant",
    status: 204,
    summary: "Soft delete an activity (user tokens only their own)",
    tags,
    params: activityIdParams,
    response: { 204: null },
    async handler({ params, call }) {
      await clients.feed.deleteActivity({ id: activityId(params.id) }, call);
      return undefined;
    },
  });

  r.add({
    method: "GET",
    url: "/operator/inspect/feeds/:group/:id",
    auth: "member",
    summary: "Inspector: a feed as the feed read shows it (no own_reactions)",
    tags: ["operator"],
    params: feedParams,
    query: feedPageQuery,
    response: { 200: feedPageSchema },
    async handler({ params, query, call }) {
      return feedPage(clients, call, params, query, operatorViewer);
    },
  });

  r.add({
    method: "GET",
    url: "/operator/inspect/activities",
    auth: "member",
    summary: "Inspector: every activity of the tenant, tombstones included (time desc, id desc)",
    tags: ["operator"],
    query: feedPageQuery,
    response: { 200: inspectorActivityPage },
    async handler({ query, call }) {
      const res = await clients.feed.listActivities({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      const { results } = await enrich(clients, call, res.activities, { ...operatorViewer, deletedAt: true });
      return { results, next: res.next || null };
    },
  });
}
