import { z } from "zod";
import { groupString, idString } from "./schemas.js";

// Request schemas of the follow graph routes (follow, unfollow, follows, followers, stats,
// suggestions, batch follows). Identifier rules are the contract's section 4.

export const graphFeedRefPattern = /^[A-Za-z0-9_]{1,64}:[A-Za-z0-9_\-.@]{1,128}$/;

/** A feed ref `group:id`, parsed into its parts. */
export const graphFeedRef = z
  .string()
  .regex(graphFeedRefPattern, "must be a feed ref group:id (group ^[A-Za-z0-9_]{1,64}$, id ^[A-Za-z0-9_\\-.@]{1,128}$)")
  .transform((s) => {
    const i = s.indexOf(":");
    return { group: s.slice(0, i), id: s.slice(i + 1) };
  });

/** `/v1/feeds/{group}/{id}/…` and `/operator/inspect/feeds/{group}/{id}/…` */
export const graphFeedParams = z.object({ group: groupString, id: idString });
export const unfollowParams = z.object({ group: groupString, id: idString, target_group: groupString, target_id: idString });
export const unfollowQuery = z.object({ keep_history: z.enum(["true", "false"]).optional() });

export const followBody = z.object({
  target: graphFeedRef,
  activity_copy_limit: z.number().int().min(0).max(1000).default(100),
});

/** Suggestions: `limit` 1..50 (default 25); not paged. */
export const suggestionsQuery = z.object({ limit: z.coerce.number().int().min(1).max(50).optional() });

/** Batch envelope: 400 only for the list itself; each item is checked on its own. */
export const batchFollowsBody = z.object({
  follows: z.array(z.looseObject({})).min(1, "at least 1 item").max(100, "at most 100 items"),
});
export const batchFollowItem = z.object({ source: graphFeedRef, target: graphFeedRef });
