import { isoOf, limits, notFound } from "@feeds/kit";
import type { Comment, Reaction } from "@feeds/proto/feeds/engagement/v1/engagement";
import {
  actingUserQuery,
  addCommentBody,
  blocklistBody,
  blocklistSchema,
  commentsQuery,
  editCommentBody,
  engagementIdParams,
  isEngagementId,
  reactBody,
  reactionKindsBody,
  reactionKindsSchema,
  reactionPage,
  reactionSchema,
  reactionsQuery,
  replyPage,
  replySchema,
  requestLimits,
  unreactParams,
} from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import { page } from "../json.js";
import type { Clients } from "@feeds/kit";
import { reactionWeight } from "../rate-weights.js";

/** The interface's Reaction resource. */
const reactionJson = (r: Reaction | undefined) =>
  r && { id: r.id, activity_id: r.activityId, user_id: r.userId, kind: r.kind, created_at: isoOf(r.createdAt) };

/** The interface's Reply resource (a top-level comment has parent_id null). */
const replyJson = (c: Comment | undefined) =>
  c && {
    id: c.id,
    activity_id: c.activityId,
    parent_id: c.parentId ?? null,
    user_id: c.userId,
    text: c.text,
    reply_count: Number(c.replyCount),
    created_at: isoOf(c.createdAt),
    edited_at: isoOf(c.editedAt),
  };

/** Activity, reaction and comment ids are UUIDs: any other id names nothing (404, no service call). */
const idOf = (id: string, what: string) => {
  if (!isEngagementId(id)) throw notFound(`${what} not found`);
  return id.toLowerCase();
};

/** Reactions and the tenant's reaction kinds, comments and replies, and the tenant's comment blocklist. */
export function engagementRoutes(r: RouteTable, clients: Pick<Clients, "engagement">) {
  const { engagement } = clients;
  const tags = ["engagement"];

  r.add({
    method: "POST",
    url: "/v1/activities/:id/reactions",
    weight: reactionWeight,
    auth: "tenant",
    status: 201,
    summary: `React to an activity (201 new, 200 the existing reaction of that user and kind; server tokens name user_id); 400 on kind for a kind outside the tenant's list or past ${requestLimits.reactionKinds} kinds on the activity`,
    tags,
    params: engagementIdParams,
    body: reactBody,
    response: { 201: reactionSchema, 200: reactionSchema },
    async handler({ params, body, call, reply }) {
      const res = await engagement.react({ activityId: idOf(params.id, "activity"), kind: body.kind, userId: body.user_id ?? "" }, call);
      reply.code(res.created ? 201 : 200);
      return reactionJson(res.reaction);
    },
  });

  r.add({
    method: "GET",
    url: "/v1/activities/:id/reactions",
    auth: "tenant",
    summary: "List an activity's reactions, newest first (optionally of one kind)",
    tags,
    params: engagementIdParams,
    query: reactionsQuery,
    response: { 200: reactionPage },
    async handler({ params, query, call }) {
      const res = await engagement.listReactions(
        { activityId: idOf(params.id, "activity"), kind: query.kind ?? "", page: { limit: query.limit, cursor: cursorOf(query) } },
        call,
      );
      return page(res.reactions.map(reactionJson), res.next);
    },
  });

  r.add({
    method: "DELETE",
    url: "/v1/activities/:id/reactions/:kind",
    weight: reactionWeight,
    auth: "tenant",
    status: 204,
    summary: "Remove your reaction of a kind (server tokens: ?user_id=); 404 when there was none",
    tags,
    params: unreactParams,
    query: actingUserQuery,
    response: { 204: null },
    async handler({ params, query, call }) {
      await engagement.unreact({ activityId: idOf(params.id, "activity"), kind: params.kind, userId: query.user_id ?? "" }, call);
      return undefined;
    },
  });

  r.add({
    method: "DELETE",
    url: "/v1/reactions/:id",
    weight: reactionWeight,
    auth: "tenant",
    status: 204,
    summary: "Remove a reaction by id (compatibility route; user tokens only their own)",
    tags,
    params: engagementIdParams,
    response: { 204: null },
    async handler({ params, call }) {
      await engagement.deleteReaction({ id: idOf(params.id, "reaction") }, call);
      return undefined;
    },
  });

  r.add({
    method: "PUT",
    url: "/v1/reactions/kinds",
    auth: "server",
    summary: `Replace the tenant's reaction kinds (at most ${requestLimits.reactionKinds}, no duplicates; empty clears them); reactions of any other kind answer 400 on kind`,
    tags,
    body: reactionKindsBody,
    response: { 200: reactionKindsSchema },
    async handler({ body, call }) {
      return { kinds: (await engagement.setReactionKinds({ kinds: body.kinds }, call)).kinds };
    },
  });

  r.add({
    method: "GET",
    url: "/v1/reactions/kinds",
    auth: "server",
    summary: "The tenant's reaction kinds in the order declared (empty: any kind, within the per-activity bound)",
    tags,
    response: { 200: reactionKindsSchema },
    async handler({ call }) {
      return { kinds: (await engagement.getReactionKinds({}, call)).kinds };
    },
  });

  r.add({
    method: "POST",
    url: "/v1/activities/:id/comments",
    auth: "tenant",
    status: 201,
    summary: "Comment on an activity, or reply to a top-level comment with parent_id (server tokens name user_id)",
    tags,
    params: engagementIdParams,
    body: addCommentBody,
    response: { 201: replySchema },
    async handler({ params, body, call }) {
      const res = await engagement.addComment(
        { activityId: idOf(params.id, "activity"), text: body.text, parentId: body.parent_id?.toLowerCase() ?? "", userId: body.user_id ?? "" },
        call,
      );
      return replyJson(res.comment);
    },
  });

  r.add({
    method: "GET",
    url: "/v1/activities/:id/comments",
    auth: "tenant",
    summary: "List an activity's top-level comments, oldest first (ties by id)",
    tags,
    params: engagementIdParams,
    query: commentsQuery,
    response: { 200: replyPage },
    async handler({ params, query, call }) {
      const res = await engagement.listComments({ activityId: idOf(params.id, "activity"), page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return page(res.comments.map(replyJson), res.next);
    },
  });

  r.add({
    method: "GET",
    url: "/v1/comments/:id/replies",
    auth: "tenant",
    summary: "List a comment's replies, oldest first (404 for a missing comment, a reply, or a deleted activity)",
    tags,
    params: engagementIdParams,
    query: commentsQuery,
    response: { 200: replyPage },
    async handler({ params, query, call }) {
      const res = await engagement.listReplies({ commentId: idOf(params.id, "comment"), page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return page(res.replies.map(replyJson), res.next);
    },
  });

  r.add({
    method: "PATCH",
    url: "/v1/comments/:id",
    auth: "tenant",
    summary: "Edit your comment's text (server tokens name user_id); sets edited_at",
    tags,
    params: engagementIdParams,
    body: editCommentBody,
    response: { 200: replySchema },
    async handler({ params, body, call }) {
      const res = await engagement.editComment({ id: idOf(params.id, "comment"), text: body.text, userId: body.user_id ?? "" }, call);
      return replyJson(res.comment);
    },
  });

  r.add({
    method: "DELETE",
    url: "/v1/comments/:id",
    auth: "tenant",
    status: 204,
    summary: "Delete your comment (server tokens: ?user_id=); a top-level comment takes its replies with it",
    tags,
    params: engagementIdParams,
    query: actingUserQuery,
    response: { 204: null },
    async handler({ params, query, call }) {
      await engagement.deleteComment({ id: idOf(params.id, "comment"), userId: query.user_id ?? "" }, call);
      return undefined;
    },
  });

  r.add({
    method: "PUT",
    url: "/v1/moderation/blocklist",
    auth: "server",
    summary: `Replace the comment blocklist (whole words, case-insensitive, full-width and invisible characters folded; at most ${limits.blocklistWords} words in all; comments, replies and edits holding one answer 422)`,
    tags: ["moderation"],
    body: blocklistBody,
    response: { 200: blocklistSchema },
    async handler({ body, call }) {
      return { terms: (await engagement.setBlocklist({ terms: body.terms }, call)).terms };
    },
  });

  r.add({
    method: "GET",
    url: "/v1/moderation/blocklist",
    auth: "server",
    summary: "The comment blocklist as stored (NFKC, invisible characters removed, lower-cased, trimmed, sorted)",
    tags: ["moderation"],
    response: { 200: blocklistSchema },
    async handler({ call }) {
      return { terms: (await engagement.getBlocklist({}, call)).terms };
    },
  });
}
