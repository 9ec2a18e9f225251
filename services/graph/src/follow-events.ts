import { newEvent, type FeedEvent } from "@feeds/kit";
import { feedKeyOf, type FollowDoc } from "./follow-repository.js";

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

/** The event of removing `edge` (`id` and `at` chosen when the removal was recorded, so that a replay publishes the same event). */
export const followDeleted = (tenantId: string, edge: Pick<FollowDoc, "source_feed" | "target_feed" | "created_at">, opts: { id: string; at: Date }): FeedEvent =>
  newEvent("follow.deleted", tenantId, followData(edge.source_feed, edge.target_feed, edge.created_at), opts);
