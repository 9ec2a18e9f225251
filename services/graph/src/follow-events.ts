import { newEvent, type FeedEvent } from "@feeds/kit";
import { feedKeyOf, type FollowDoc, type FollowRepository } from "./follow-repository.js";

// The events of edge changes (contract section 3): `follow.created` when an edge appears,
// `follow.deleted` when one disappears; a repeated follow or an unfollow of no edge has none, and
// batch imports have none. `data` is the interface's Follow; `created_at` of follow.created is
// the follow's, of follow.deleted the unfollow's (the time of each act).

export interface FollowData {
  source_group: string;
  source_id: string;
  target_group: string;
  target_id: string;
  created_at: string;
  [key: string]: unknown;
}

export function followData(source: string, target: string, createdAt: Date): FollowData {
  const s = feedKeyOf(source);
  const t = feedKeyOf(target);
  return { source_group: s.group, source_id: s.id, target_group: t.group, target_id: t.id, created_at: createdAt.toISOString() };
}

/** The event of an edge about to be created at `at` (the edge gets that created_at). */
export const followCreated = (tenantId: string, source: string, target: string, at: Date): FeedEvent =>
  newEvent("follow.created", tenantId, followData(source, target, at), { at });

/** The event of removing `edge`, now. */
export const followDeleted = (tenantId: string, edge: FollowDoc): FeedEvent =>
  newEvent("follow.deleted", tenantId, followData(edge.source_feed, edge.target_feed, edge.created_at));

/**
 * For the relay, of a record whose writer died: did its event's edge change happen? The edge's
 * created_at tells one edge from another between the same feeds: follow.created happened while
 * that very edge exists; follow.deleted once it no longer does.
 */
export function createFollowEventConfirm(follows: Pick<FollowRepository, "find">) {
  return async (e: FeedEvent): Promise<boolean> => {
    const d = e.data as FollowData;
    const edge = await follows.find(e.tenant_id, `${d.source_group}:${d.source_id}`, `${d.target_group}:${d.target_id}`);
    const same = edge !== null && edge.created_at.toISOString() === d.created_at;
    if (e.type === "follow.created") return same;
    if (e.type === "follow.deleted") return !same;
    return false;
  };
}

export type FollowEventConfirm = ReturnType<typeof createFollowEventConfirm>;
