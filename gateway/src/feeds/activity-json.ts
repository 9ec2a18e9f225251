import { isoOf } from "@feeds/kit";
import type { FeedObject } from "@feeds/proto/feeds/catalog/v1/catalog";
import { customOf } from "../json.js";

// Protobuf activities and objects → the interface's JSON resources (interface section 2). The
// Activity mapping lives in kit: activity.* webhook events carry the same JSON.
export { activityJson, actorUserId, actorUserJson, type ActivityJson, type ActivityView, type ActorUserJson } from "@feeds/kit";

export interface ObjectJson {
  type: string;
  id: string;
  custom: Record<string, unknown>;
  updated_at: string | null;
}

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

