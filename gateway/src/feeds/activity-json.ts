import { isId, isoOf } from "@feeds/kit";
import type { Activity } from "@feeds/proto/feeds/feed/v1/feed";
import type { FeedObject } from "@feeds/proto/feeds/catalog/v1/catalog";
import type { User } from "@feeds/proto/feeds/identity/v1/identity";
import { customOf } from "../json.js";

// Protobuf activities and objects → the interface's JSON resources (interface section 2).

/** `actor_user`: the shape it has on a notification. */
export interface ActorUserJson {
  id: string;
  custom: Record<string, unknown>;
}

export interface ObjectJson {
  type: string;
  id: string;
  custom: Record<string, unknown>;
  updated_at: string | null;
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

/** The user id an actor names (`user:<id>`), or null for any other actor. */
export function actorUserId(actor: string): string | null {
  if (!actor.startsWith("user:")) return null;
  const id = actor.slice("user:".length);
  return isId(id) ? id : null;
}

export const actorUserJson = (u: User): ActorUserJson => ({ id: u.id, custom: customOf(u.customJson) });

export const objectJson = (o: FeedObject): ObjectJson => ({
  type: o.type,
  id: o.id,
  custom: customOf(o.customJson),
  updated_at: isoOf(o.updatedAt),
});

/** `type:id` → its parts (type and id never contain `:`). */
export function splitRef(ref: string): { type: string; id: string } | null {
  const at = ref.indexOf(":");
  return at > 0 && at < ref.length - 1 ? { type: ref.slice(0, at), id: ref.slice(at + 1) } : null;
}

export interface ActivityView {
  actorUser: ActorUserJson | null;
  /** Present for user tokens only (server tokens and operators have no end-user identity). */
  ownReactions?: string[];
  /** Inspector views add `deleted_at`. */
  withDeletedAt?: boolean;
}

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
