import { z } from "zod";
import { actorUserSchema, isoDateTime, jsonObjectSchema, pageOf, uuidString } from "./responses.js";

// Response schemas of activities, feed reads, objects, promoted activities and the follow graph
// (interface section 2; contract section 2 for what the interface leaves unshown).

const count = z.number().int().min(0);

/** An activity as every read shows it. */
export const activitySchema = z.object({
  id: uuidString,
  actor: z.string(),
  verb: z.string(),
  object: z.string(),
  target: z.string().nullable().optional(),
  foreign_id: z.string().nullable().optional().describe("dedupe identity together with time"),
  time: isoDateTime,
  custom: jsonObjectSchema,
  origin_feed: z.string(),
  reaction_counts: z.record(z.string(), count).describe("count per reaction kind"),
  actor_user: actorUserSchema.nullable().optional().describe("the actor's user when actor is user:<id> and the record exists; null otherwise"),
  own_reactions: z.array(z.string()).optional().describe("reaction kinds of the calling user; omitted for server tokens and operators"),
  refs: z.array(z.string()).describe("type:id refs, at most 4"),
  edited_at: isoDateTime.nullable().describe("null until first patched"),
  version: z.number().int().min(1).describe("starts at 1; increments on any change"),
});
/** The answer to adding an activity: the activity, with `warnings` when there are any. */
export const addedActivitySchema = activitySchema.extend({
  warnings: z.array(z.string()).optional().describe("e.g. actor_user_unresolved: the actor names a user with no record"),
});
/** The operator inspector's view: tombstones included, with `deleted_at`. */
export const inspectorActivitySchema = activitySchema.extend({
  deleted_at: isoDateTime.nullable().describe("non-null for a soft-deleted tombstone"),
});
export const inspectorActivityPage = pageOf(inspectorActivitySchema);

/** The interface's Object. */
export const feedObjectSchema = z.object({ type: z.string(), id: z.string(), custom: jsonObjectSchema, updated_at: isoDateTime });
export const objectsByRefSchema = z.object({ objects: z.record(z.string(), feedObjectSchema).describe("type:id → Object; missing refs are absent") });
export const bulkObjectsSchema = z.object({ results: z.array(feedObjectSchema) });

/** Entry of a feed read's `promoted` sidecar: no audience, no served_count, no time. */
export const promotedActivitySchema = z.object({
  id: uuidString,
  actor: z.string(),
  verb: z.string(),
  object: z.string(),
  custom: jsonObjectSchema,
  promoted: z.literal(true),
});
/** The stored promoted record (answer to create, entries of the server listing). */
export const promotedRecordSchema = promotedActivitySchema.extend({
  audience: z
    .object({ users: z.array(z.string()), feeds: z.array(z.string()) })
    .nullable()
    .describe("null when the record targets every read"),
  served_count: count,
  created_at: isoDateTime,
  retracted_at: isoDateTime.nullable(),
});
export const promotedRecordPage = pageOf(promotedRecordSchema);

/** A feed read (and the operator's inspect view): a page of activities and its sidecars. */
export const feedPageSchema = pageOf(activitySchema).extend({
  promoted: z.array(promotedActivitySchema).optional().describe("first pages only (no next/cursor sent)"),
  objects: z.record(z.string(), feedObjectSchema).optional().describe("the page's refs resolved; absent when no activity has a ref"),
});
export const feedSignalSchema = z.object({
  feed: z.string(),
  version: z.number().int().min(0),
  head: z.string().nullable().describe("the newest activity id, null for an empty feed"),
});

export const followSchema = z.object({
  source_group: z.string(),
  source_id: z.string(),
  target_group: z.string(),
  target_id: z.string(),
  created_at: isoDateTime,
});
export const followPage = pageOf(followSchema);
export const followStatsSchema = z.object({ feed: z.string(), follower_count: count, following_count: count });
export const suggestionSchema = z.object({
  group: z.string().describe("always user"),
  id: z.string(),
  mutuals: count.describe("feeds the caller follows that also follow the suggestion; 0 for a popularity fill"),
});
export const suggestionsSchema = z.object({ results: z.array(suggestionSchema) });
