import { limits } from "@feeds/kit";

// How many times a costly request counts in its rate windows (limits.rateWeights), from its raw
// body, before validation: a value of the wrong shape weighs as its default would, and the
// request then fails validation anyway. docs/limits.md lists them per route.

const w = limits.rateWeights;
const field = (raw: unknown, name: string): unknown => (raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>)[name] : undefined);

/** A follow: 1, plus 1 per `followCopiesPerUnit` activities it may copy into the follower. */
export function followWeight({ body }: { body: unknown }): number {
  const asked = field(body, "activity_copy_limit");
  const copies = typeof asked === "number" && Number.isFinite(asked) ? Math.min(1000, Math.max(0, asked)) : 100;
  return 1 + Math.ceil(copies / w.followCopiesPerUnit);
}

/** `POST /v1/objects/bulk`: 1 per `bulkObjectsPerUnit` objects, at least 1. */
export function bulkObjectsWeight({ body }: { body: unknown }): number {
  const objects = field(body, "objects");
  return Math.max(1, Math.ceil((Array.isArray(objects) ? Math.min(objects.length, 100) : 0) / w.bulkObjectsPerUnit));
}

export const suggestionsWeight = w.suggestions;
/** A grouped notification page reads each shown group's actors and members (about 40 queries). */
export const notificationGroupsWeight = w.notificationGroups;
export const reactionWeight = w.reaction;
