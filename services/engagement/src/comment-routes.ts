import { randomUUID } from "node:crypto";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { decodeCursor, encodeCursor, forbidden, notFound, pageLimit, requireTenant, validationFailed } from "@feeds/kit";
import type { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { actingUser } from "./acting-user.js";
import { isUuid, type Activities } from "./activities.js";
import type { Moderation } from "./blocklist.js";
import type { CommentChanges } from "./comment-changes.js";
import type { CommentDoc, CommentRepository } from "./comment-repository.js";
import { commentEvent } from "./events.js";
import { commentMessage } from "./messages.js";

type CommentRpcs = "addComment" | "listComments" | "listReplies" | "editComment" | "deleteComment";

export const MAX_TEXT = 5000;

export interface CommentRoutesDeps {
  comments: Pick<CommentRepository, "live" | "topLevel" | "replies" | "editText">;
  activities: Pick<Activities, "live">;
  changes: Pick<CommentChanges, "add" | "delete">;
  moderation: Pick<Moderation, "check">;
}

function checkText(text: string): string {
  if (text.length < 1 || text.length > MAX_TEXT || text.trim() === "") {
    throw validationFailed([{ path: "text", message: `must be 1 to ${MAX_TEXT} characters, not only whitespace` }]);
  }
  return text;
}

/** A reply's parent: a live top-level comment of the same activity (else 400 on parent_id). */
function checkParent(parent: CommentDoc | null, activityId: string): CommentDoc {
  const bad = (message: string) => validationFailed([{ path: "parent_id", message }]);
  if (!parent) throw bad("names no comment");
  if (parent.parent_id !== null) throw bad("is a reply: replies have no replies");
  if (parent.activity_id !== activityId) throw bad("belongs to another activity");
  return parent;
}

const pageOf = (rows: CommentDoc[], limit: number) => {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { page: page.map(commentMessage), next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "" };
};

const afterOf = (cursor: string | undefined) => {
  const after = cursor ? decodeCursor(cursor, ["number", "string"] as const) : null;
  return after ? { time: new Date(after[0]), id: after[1] } : null;
};

/** Comments, replies (one level), edits and deletes; texts pass the tenant's blocklist. */
export function createCommentRoutes(deps: CommentRoutesDeps): Pick<ServiceImpl<typeof EngagementService>, CommentRpcs> {
  const { comments, activities, changes, moderation } = deps;

  /** A comment readers can reach: it, its parent (for a reply) and its activity are live. */
  async function reachable(tenantId: string, id: string) {
    const c = isUuid(id) ? await comments.live(tenantId, id) : null;
    if (!c) throw notFound("comment not found");
    const parent = c.parent_id !== null ? await comments.live(tenantId, c.parent_id) : null;
    if (c.parent_id !== null && !parent) throw notFound("comment not found");
    const activity = await activities.live(tenantId, c.activity_id);
    return { c, parent, activity };
  }

  /** A comment its author changes (a user token acts as itself, a server token names the user). */
  async function authored(ctx: HandlerContext, tenantId: string, id: string, given: string) {
    const userId = actingUser(ctx, given);
    const found = await reachable(tenantId, id);
    if (found.c.user_id !== userId) throw forbidden("not your comment");
    return found;
  }

  return {
    async addComment(req, ctx) {
      const tenantId = requireTenant(ctx);
      const userId = actingUser(ctx, req.userId);
      const text = checkText(req.text);
      const parentId = req.parentId;
      if (parentId && !isUuid(parentId)) throw validationFailed([{ path: "parent_id", message: "must be a comment id (uuid)" }]);
      const activity = await activities.live(tenantId, req.activityId);
      await moderation.check(tenantId, text);
      const comment = (parent: string | null): CommentDoc => ({
        _id: randomUUID(),
        tenant_id: tenantId,
        activity_id: activity.id,
        parent_id: parent,
        user_id: userId,
        text,
        reply_count: 0,
        created_at: new Date(),
        edited_at: null,
        deleted_at: null,
      });
      if (!parentId) {
        const doc = comment(null);
        await changes.add(doc, commentEvent("comment.added", doc, activity.actor, null, doc.created_at));
        return { comment: commentMessage(doc) };
      }
      // The parent's count is conditioned on it being live: a parent deleted after this check
      // takes the reply back out (400 as here).
      const parent = checkParent(await comments.live(tenantId, parentId), activity.id);
      const reply = comment(parentId);
      await changes.add(reply, commentEvent("comment.added", reply, activity.actor, parent.user_id, reply.created_at));
      return { comment: commentMessage(reply) };
    },

    async listComments(req, ctx) {
      const tenantId = requireTenant(ctx);
      const limit = pageLimit(req.page?.limit);
      const after = afterOf(req.page?.cursor);
      const activity = await activities.live(tenantId, req.activityId);
      const { page, next } = pageOf(await comments.topLevel(tenantId, activity.id, limit, after), limit);
      return { comments: page, next };
    },

    async listReplies(req, ctx) {
      const tenantId = requireTenant(ctx);
      const limit = pageLimit(req.page?.limit);
      const after = afterOf(req.page?.cursor);
      const { c } = await reachable(tenantId, req.commentId);
      if (c.parent_id !== null) throw notFound("a reply has no replies");
      const { page, next } = pageOf(await comments.replies(tenantId, c._id, limit, after), limit);
      return { replies: page, next };
    },

    async editComment(req, ctx) {
      const tenantId = requireTenant(ctx);
      const text = checkText(req.text);
      const { c } = await authored(ctx, tenantId, req.id, req.userId);
      await moderation.check(tenantId, text);
      const updated = await comments.editText(tenantId, c._id, text, new Date());
      if (!updated) throw notFound("comment not found");
      return { comment: commentMessage(updated) };
    },

    async deleteComment(req, ctx) {
      const tenantId = requireTenant(ctx);
      const { c, parent, activity } = await authored(ctx, tenantId, req.id, req.userId);
      // A top-level comment leaves every read with its replies at once; a reply lowers its
      // parent's reply_count before the answer.
      await changes.delete(tenantId, c._id, (current, at) => commentEvent("comment.deleted", current, activity.actor, parent?.user_id ?? null, at));
      return {};
    },
  };
}
