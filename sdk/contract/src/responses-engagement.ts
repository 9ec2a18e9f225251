import { z } from "zod";
import { actorUserSchema, isoDateTime, pageOf, uuidString } from "./responses.js";

// Response schemas of reactions, comments and replies, the moderation blocklist and the
// notification feed (interface section 2; contract section 2 for the reaction record).

const count = z.number().int().min(0);

export const reactionSchema = z.object({
  id: uuidString,
  activity_id: uuidString,
  user_id: z.string(),
  kind: z.string(),
  created_at: isoDateTime,
});
export const reactionPage = pageOf(reactionSchema);

/** A comment or a reply (a top-level comment has `parent_id` null). */
export const replySchema = z.object({
  id: uuidString,
  activity_id: uuidString,
  parent_id: uuidString.nullable(),
  user_id: z.string(),
  text: z.string(),
  reply_count: count,
  created_at: isoDateTime,
  edited_at: isoDateTime.nullable(),
});
export const replyPage = pageOf(replySchema);

/** The blocklist as stored: NFKC, invisible characters removed, lower-cased, trimmed, sorted. */
export const blocklistSchema = z.object({ terms: z.array(z.string()) });

/** The tenant's reaction kinds in the order declared; empty: any kind (within the per-activity bound). */
export const reactionKindsSchema = z.object({ kinds: z.array(z.string()) });

export const notificationSchema = z.object({
  id: uuidString,
  verb: z.string().describe("follow, react or comment"),
  actor: z.string(),
  object: z.string().describe("follow: the followed feed ref; react: the activity id; comment: the comment id"),
  reaction_kind: z.string().nullable(),
  activity_id: uuidString.nullable().describe("set on comment (the activity to open); null for follow and react"),
  created_at: isoDateTime,
  seen_at: isoDateTime.nullable(),
  read_at: isoDateTime.nullable(),
  actor_user: actorUserSchema.nullable().optional(),
});
export const notificationCountsSchema = z.object({ unseen: count, unread: count });
export const notificationPageSchema = pageOf(notificationSchema).extend(notificationCountsSchema.shape);
export const notificationSignalSchema = notificationCountsSchema.extend({ version: z.number().int().min(0) });
