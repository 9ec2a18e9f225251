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

/** A notification group (issue 23): counts, up to 5 distinct recent actors and up to 5 newest members. */
export const notificationGroupSchema = z.object({
  group_key: z.string().describe("32 hex characters; names the group in members and marks"),
  verb: z.string().describe("follow, react or comment (replies are comments too)"),
  reaction_kind: z.string().nullable(),
  object: z.string().describe("follow: the followed feed ref; react and comment: the activity id; replies: the parent comment id"),
  activity_id: uuidString.nullable().describe("comments and replies: the activity; null for follow and react"),
  activity_count: count.describe("the notifications in the group"),
  actor_count: count.describe("the distinct actors of those notifications"),
  actors: z.array(actorUserSchema).describe("up to 5 distinct actors, most recent first"),
  latest: z.array(notificationSchema).describe("up to 5 members, newest first"),
  first_at: isoDateTime,
  updated_at: isoDateTime.describe("the newest member's time: the page order"),
  seen_at: isoDateTime.nullable().describe("null while a member is unseen"),
  read_at: isoDateTime.nullable().describe("null while a member is unread"),
});
export const notificationGroupPageSchema = pageOf(notificationGroupSchema).extend(notificationCountsSchema.shape);
export const notificationGroupMembersSchema = pageOf(notificationSchema);
