import { z } from "zod";
import { requestLimits } from "./limits.js";
import { idString, pageQuery } from "./schemas.js";

// Request schemas of the reaction, comment and moderation routes (contract section 2; lengths and
// patterns of section 4 and of our own decisions: reaction kinds, blocklist terms). Only route
// schemas are exported: sibling schema modules share the package's namespace.

const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** Reaction and comment ids are UUIDs: anything else names none (the gateway answers 404). */
export const isEngagementId = (id: string): boolean => uuidPattern.test(id);

/** Comment text: 1..5000 characters, not only whitespace. */
export const MAX_COMMENT_TEXT = 5000;
/** Blocklist: at most 1000 terms, each 1..100 characters once trimmed. */
const MAX_BLOCKLIST_TERMS = requestLimits.blocklistTerms;
const MAX_BLOCKLIST_TERM = requestLimits.blocklistTermChars;

const RESERVED_KINDS = new Set(["__proto__", "constructor", "prototype"]);
/** A reaction kind is a key of `reaction_counts`: 1..64 of letters, digits, `_` and `-`. */
export const reactionKind = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "must match ^[A-Za-z0-9_-]{1,64}$")
  .refine((k) => !RESERVED_KINDS.has(k), "must not be __proto__, constructor or prototype");

const commentText = z
  .string()
  .min(1)
  .max(MAX_COMMENT_TEXT)
  .refine((t) => t.trim() !== "", "must not be only whitespace");

/** A path id (activity, reaction, comment); the gateway answers 404 for one that is not a UUID. */
const pathId = z.string().min(1).max(2048);

/** `{id}` of `/v1/activities/{id}/reactions|comments`, `/v1/reactions/{id}`, `/v1/comments/{id}`. */
export const engagementIdParams = z.object({ id: pathId });
export const unreactParams = z.object({ id: pathId, kind: reactionKind });

/** `user_id`: server tokens must send it (the user acted for); a user token may send only its own. */
const actingUserId = idString.nullish();
export const actingUserQuery = z.object({ user_id: idString.optional() });

export const reactBody = z.object({ kind: reactionKind, user_id: actingUserId });

/** Reactions: `limit` 1..100 (default 20), `next`, `cursor`, `kind` (optional filter). */
export const reactionsQuery = pageQuery.extend({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  kind: reactionKind.optional(),
});

/** Comments and replies: `limit` 1..100 (default 20), `next`, `cursor` (next wins). */
export const commentsQuery = pageQuery.extend({ limit: z.coerce.number().int().min(1).max(100).default(20) });

export const addCommentBody = z.object({
  text: commentText,
  parent_id: z.string().regex(uuidPattern, "must be a comment id (uuid)").nullish(),
  user_id: actingUserId,
});

export const editCommentBody = z.object({ text: commentText, user_id: actingUserId });

export const blocklistBody = z.object({
  terms: z
    .array(
      z
        .string()
        .max(10 * MAX_BLOCKLIST_TERM)
        .refine((t) => t.trim().length >= 1 && t.trim().length <= MAX_BLOCKLIST_TERM, `must be 1 to ${MAX_BLOCKLIST_TERM} characters once trimmed`),
    )
    .max(MAX_BLOCKLIST_TERMS, `at most ${MAX_BLOCKLIST_TERMS} terms`),
});

/** The tenant's reaction kinds: at most `requestLimits.reactionKinds`, no duplicates (named by index, `kinds.3`); empty clears them. */
export const reactionKindsBody = z.object({
  kinds: z
    .array(reactionKind)
    .max(requestLimits.reactionKinds, `at most ${requestLimits.reactionKinds} kinds`)
    .superRefine((kinds, ctx) => {
      const seen = new Set<string>();
      kinds.forEach((k, i) => {
        if (seen.has(k)) ctx.addIssue({ code: "custom", path: [i], message: "duplicate kind" });
        seen.add(k);
      });
    }),
});
