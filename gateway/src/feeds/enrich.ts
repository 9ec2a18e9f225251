import type { CallOptions } from "@connectrpc/connect";
import type { Activity } from "@feeds/proto/feeds/feed/v1/feed";
import type { FeedPageQuery, FeedParams } from "@feeds/contract";
import type { TenantAuth } from "../auth.js";
import { cursorOf } from "../define.js";
import type { Clients } from "@feeds/kit";
import { promotedSidecar } from "./promoted-sidecar.js";
import {
  activityJson,
  actorUserId,
  actorUserJson,
  objectJson,
  splitRef,
  type ActivityJson,
  type ActorUserJson,
  type ObjectJson,
} from "./activity-json.js";

// The one place activities are turned into interface JSON: add, read one, feed reads, inspector.
// Enrichment is per batch, never per activity: one users call and one catalog call, in parallel.

/** Who is looking: decides `own_reactions` and `deleted_at`. */
export interface Viewer {
  /** The end-user behind a user token; null for server tokens and operators (no own_reactions). */
  userId: string | null;
  /** The inspector's activity listing shows tombstones with `deleted_at`. */
  deletedAt?: boolean;
}

export const viewerOf = (tenant: TenantAuth | null): Viewer => ({ userId: tenant?.kind === "user" ? tenant.userId : null });
/** Operators forward no end-user identity: own_reactions is always absent. */
export const operatorViewer: Viewer = { userId: null };

/** What enrichment calls: actor users, objects, the viewer's own reactions. */
export type EnrichClients = Pick<Clients, "users" | "catalog" | "engagement">;
/** What a feed page calls: the page and its promoted sidecar, then enrichment. */
export type FeedPageClients = EnrichClients & Pick<Clients, "feed" | "promoted">;

export interface Enriched {
  results: ActivityJson[];
  /** The objects sidecar: only when asked for and some activity has a ref. */
  objects?: Record<string, ObjectJson>;
}

async function actorUsers(clients: Pick<Clients, "users">, call: CallOptions, activities: Activity[]): Promise<Map<string, ActorUserJson>> {
  const ids = [...new Set(activities.map((a) => actorUserId(a.actor)).filter((id): id is string => id !== null))];
  if (ids.length === 0) return new Map();
  const res = await clients.users.getUsers({ ids }, call);
  return new Map(res.users.map((u) => [u.id, actorUserJson(u)]));
}

async function objectsOf(clients: Pick<Clients, "catalog">, call: CallOptions, refs: string[]): Promise<Record<string, ObjectJson>> {
  const parts = refs.map(splitRef).filter((p): p is { type: string; id: string } => p !== null);
  const wanted = new Set(refs);
  const out: Record<string, ObjectJson> = {};
  if (parts.length === 0) return out;
  const res = await clients.catalog.getObjects({ refs: parts }, call);
  for (const o of res.objects) {
    const key = `${o.type}:${o.id}`;
    if (wanted.has(key)) out[key] = objectJson(o);
  }
  return out;
}

/** The caller's reaction kinds per activity, in one engagement call; none for server tokens. */
async function ownReactionsOf(
  clients: Pick<Clients, "engagement">,
  call: CallOptions,
  activities: Activity[],
  userId: string | null,
): Promise<Map<string, string[]> | undefined> {
  if (userId === null) return undefined;
  if (activities.length === 0) return new Map();
  const res = await clients.engagement.listOwnReactions({ userId, activityIds: activities.map((a) => a.id) }, call);
  return new Map(res.reactions.map((r) => [r.activityId, r.kinds]));
}

/** Activities → interface JSON with actor_user, own_reactions and (optionally) the objects sidecar. */
export async function enrich(
  clients: EnrichClients,
  call: CallOptions,
  activities: Activity[],
  viewer: Viewer,
  opts: { objects?: boolean } = {},
): Promise<Enriched> {
  const refs = opts.objects ? [...new Set(activities.flatMap((a) => a.refs))] : [];
  const [users, objects, own] = await Promise.all([
    actorUsers(clients, call, activities),
    refs.length ? objectsOf(clients, call, refs) : Promise.resolve(undefined),
    ownReactionsOf(clients, call, activities, viewer.userId),
  ]);
  const results = activities.map((a) => {
    const uid = actorUserId(a.actor);
    return activityJson(a, {
      actorUser: (uid !== null && users.get(uid)) || null,
      ownReactions: own ? (own.get(a.id) ?? []) : undefined,
      withDeletedAt: viewer.deletedAt,
    });
  });
  return objects ? { results, objects } : { results };
}

/** One activity as interface JSON (no sidecars). */
export async function enrichOne(clients: EnrichClients, call: CallOptions, activity: Activity | undefined, viewer: Viewer): Promise<ActivityJson> {
  if (!activity) throw new Error("the feed service answered no activity");
  const { results } = await enrich(clients, call, [activity], viewer);
  return results[0] as ActivityJson;
}

/** A feed read (`/v1/feeds/{group}/{id}` and the operator's inspect view): `{results, next, objects?}`. */
export async function feedPage(clients: FeedPageClients, call: CallOptions, feed: FeedParams, query: FeedPageQuery, viewer: Viewer) {
  const cursor = cursorOf(query);
  // The promoted sidecar belongs to first pages only; it is fetched beside the page, not after it.
  const [res, promoted] = await Promise.all([
    clients.feed.readFeed({ feed: { group: feed.group, id: feed.id }, page: { limit: query.limit, cursor } }, call),
    cursor ? Promise.resolve(undefined) : promotedSidecar(clients, call, feed, viewer.userId),
  ]);
  const { results, objects } = await enrich(clients, call, res.activities, viewer, { objects: true });
  return { results, next: res.next || null, ...(promoted ? { promoted } : {}), ...(objects ? { objects } : {}) };
}
