import { isoOf, notFound } from "@feeds/kit";
import type { Comment, Reaction } from "@feeds/proto/feeds/engagement/v1/engagement";
import { isEngagementId, operations } from "@feeds/contract";
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

  r.handle(operations.react, {
    weight: reactionWeight,
    async handler({ params, body, call, reply }) {
      const res = await engagement.react({ activityId: idOf(params.id, "activity"), kind: body.kind, userId: body.user_id ?? "" }, call);
      reply.code(res.created ? 201 : 200);
      return reactionJson(res.reaction);
    },
  });

  r.handle(operations.reactions, {
    async handler({ params, query, call }) {
      const res = await engagement.listReactions(
        { activityId: idOf(params.id, "activity"), kind: query.kind ?? "", page: { limit: query.limit, cursor: cursorOf(query) } },
        call,
      );
      return page(res.reactions.map(reactionJson), res.next);
    },
  });

  r.handle(operations.unreact, {
    weight: reactionWeight,
    async handler({ params, query, call }) {
      await engagement.unreact({ activityId: idOf(params.id, "activity"), kind: params.kind, userId: query.user_id ?? "" }, call);
      return undefined;
    },
  });

  r.handle(operations.deleteReaction, {
    weight: reactionWeight,
    async handler({ params, call }) {
      await engagement.deleteReaction({ id: idOf(params.id, "reaction") }, call);
      return undefined;
    },
  });

  r.handle(operations.setReactionKinds, {
    async handler({ body, call }) {
      return { kinds: (await engagement.setReactionKinds({ kinds: body.kinds }, call)).kinds };
    },
  });

  r.handle(operations.getReactionKinds, {
    async handler({ call }) {
      return { kinds: (await engagement.getReactionKinds({}, call)).kinds };
    },
  });

  r.handle(operations.addComment, {
    async handler({ params, body, call }) {
      const res = await engagement.addComment(
        { activityId: idOf(params.id, "activity"), text: body.text, parentId: body.parent_id?.toLowerCase() ?? "", userId: body.user_id ?? "" },
        call,
      );
      return replyJson(res.comment);
    },
  });

  r.handle(operations.comments, {
    async handler({ params, query, call }) {
      const res = await engagement.listComments({ activityId: idOf(params.id, "activity"), page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return page(res.comments.map(replyJson), res.next);
    },
  });

  r.handle(operations.replies, {
    async handler({ params, query, call }) {
      const res = await engagement.listReplies({ commentId: idOf(params.id, "comment"), page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return page(res.replies.map(replyJson), res.next);
    },
  });

  r.handle(operations.editComment, {
    async handler({ params, body, call }) {
      const res = await engagement.editComment({ id: idOf(params.id, "comment"), text: body.text, userId: body.user_id ?? "" }, call);
      return replyJson(res.comment);
    },
  });

  r.handle(operations.deleteComment, {
    async handler({ params, query, call }) {
      await engagement.deleteComment({ id: idOf(params.id, "comment"), userId: query.user_id ?? "" }, call);
      return undefined;
    },
  });

  r.handle(operations.setBlocklist, {
    async handler({ body, call }) {
      return { terms: (await engagement.setBlocklist({ terms: body.terms }, call)).terms };
    },
  });

  r.handle(operations.getBlocklist, {
    async handler({ call }) {
      return { terms: (await engagement.getBlocklist({}, call)).terms };
    },
  });
}
