import type { Activity } from "@feeds/proto/feeds/feed/v1/feed";
import type { User } from "@feeds/proto/feeds/identity/v1/identity";
import { isId } from "./ids.js";
import { isoOf } from "./time.js";

// The interface's Activity JSON (section 2), built from the protobuf activity. One mapping for
// every place that shows an activity: the gateway's reads and the `data` of activity.* events.

/** `actor_user`: the shape it has on a notification. */
export interface ActorUserJson {
  id: string;
  custom: Record<string, unknown>;
}

export interface ActivityJson {
  id: string;
  actor: string;
  verb: string;
  object: string;
  target: string | null;
  foreign_id: string | null;
  time: string | null;
  custom: Record<string, unknown>;
  origin_feed: string;
  reaction_counts: Record<string, number>;
  actor_user: ActorUserJson | null;
  own_reactions?: string[];
  refs: string[];
  edited_at: string | null;
  version: number;
  deleted_at?: string | null;
}

export interface ActivityView {
  actorUser: ActorUserJson | null;
  /** Present for user tokens only (server tokens and operators have no end-user identity). */
  ownReactions?: string[];
  /** Inspector views (and activity.deleted events) add `deleted_at`. */
  withDeletedAt?: boolean;
}

const customOf = (json: string): Record<string, unknown> => (json ? (JSON.parse(json) as Record<string, unknown>) : {});

/** The user id an actor names (`user:<id>`), or null for any other actor. */
export function actorUserId(actor: string): string | null {
  if (!actor.startsWith("user:")) return null;
  const id = actor.slice("user:".length);
  return isId(id) ? id : null;
}

export const actorUserJson = (u: User): ActorUserJson => ({ id: u.id, custom: customOf(u.customJson) });

export function activityJson(a: Activity, view: ActivityView): ActivityJson {
  return {
    id: a.id,
    actor: a.actor,
    verb: a.verb,
    object: a.object,
    target: a.target ?? null,
    foreign_id: a.foreignId ?? null,
    time: isoOf(a.time),
    custom: customOf(a.customJson),
    origin_feed: a.originFeed,
    reaction_counts: Object.fromEntries(Object.entries(a.reactionCounts).map(([k, n]) => [k, Number(n)])),
    actor_user: view.actorUser,
    ...(view.ownReactions ? { own_reactions: view.ownReactions } : {}),
    refs: [...a.refs],
    edited_at: isoOf(a.editedAt),
    version: Number(a.version),
    ...(view.withDeletedAt ? { deleted_at: isoOf(a.deletedAt) } : {}),
  };
}
