import type { ServiceImpl } from "@connectrpc/connect";
import {
  callerOf,
  decodeCursor,
  encodeCursor,
  forbidden,
  isId,
  isReactionKind,
  notFound,
  pageLimit,
  requireTenant,
  validationFailed,
} from "@feeds/kit";
import type { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { actingUser } from "./acting-user.js";
import { isUuid, type Activities } from "./activities.js";
import { reactionMessage } from "./messages.js";
import type { OwnReactions } from "./own-reactions.js";
import type { ReactionChanges } from "./reaction-changes.js";
import type { ReactionKinds } from "./reaction-kinds.js";
import type { ReactionRepository } from "./reaction-repository.js";

type ReactionRpcs = "listOwnReactions" | "react" | "listReactions" | "unreact" | "deleteReaction";

export interface ReactionRoutesDeps {
  reactions: Pick<ReactionRepository, "get" | "byId" | "page">;
  activities: Pick<Activities, "live">;
  changes: Pick<ReactionChanges, "add" | "remove">;
  own: Pick<OwnReactions, "kindsOf">;
  kinds: Pick<ReactionKinds, "declared">;
}

function checkKind(kind: string): string {
  if (!isReactionKind(kind)) {
    throw validationFailed([{ path: "kind", message: "must match ^[A-Za-z0-9_-]{1,64}$ (and not be __proto__, constructor or prototype)" }]);
  }
  return kind;
}

/** React, unreact, list reactions, and the caller's own reactions for feed reads. */
export function createReactionRoutes(deps: ReactionRoutesDeps): Pick<ServiceImpl<typeof EngagementService>, ReactionRpcs> {
  const { reactions, activities, changes, own, kinds } = deps;

  return {
    async listOwnReactions(req, ctx) {
      const tenantId = requireTenant(ctx);
      const ids = [...new Set(req.activityIds)].filter(isUuid).slice(0, 1000);
      if (!isId(req.userId) || !ids.length) return { reactions: [] };
      const kinds = await own.kindsOf(tenantId, req.userId, ids);
      return { reactions: [...kinds].map(([activityId, k]) => ({ activityId, kinds: k })) };
    },

    async react(req, ctx) {
      const tenantId = requireTenant(ctx);
      const userId = actingUser(ctx, req.userId);
      const kind = checkKind(req.kind);
      if (!isUuid(req.activityId)) throw notFound("activity not found");
      const declared = await kinds.declared(tenantId);
      if (declared.length > 0 && !declared.includes(kind)) {
        throw validationFailed([{ path: "kind", message: "is not one of the tenant's reaction kinds" }]);
      }
      const stored = await changes.add(tenantId, req.activityId, userId, kind);
      return { reaction: reactionMessage(stored.doc), created: stored.created };
    },

    async listReactions(req, ctx) {
      const tenantId = requireTenant(ctx);
      const kind = req.kind ? checkKind(req.kind) : null;
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      const activity = await activities.live(tenantId, req.activityId);
      const rows = await reactions.page(tenantId, activity.id, kind, limit, after ? { time: new Date(after[0]), id: after[1] } : null);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        reactions: page.map(reactionMessage),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last.id]) : "",
      };
    },

    async unreact(req, ctx) {
      const tenantId = requireTenant(ctx);
      const userId = actingUser(ctx, req.userId);
      const kind = checkKind(req.kind);
      if (!isUuid(req.activityId)) throw notFound("activity not found");
      await changes.remove(tenantId, () => reactions.get(tenantId, req.activityId, userId, kind));
      return {};
    },

    async deleteReaction(req, ctx) {
      const tenantId = requireTenant(ctx);
      const caller = callerOf(ctx);
      if (caller.kind !== "user" && caller.kind !== "server" && caller.kind !== "system") throw forbidden("server or user token required");
      if (!isUuid(req.id)) throw notFound("reaction not found");
      await changes.remove(
        tenantId,
        () => reactions.byId(tenantId, req.id),
        (r) => {
          if (caller.kind === "user" && r.user_id !== caller.userId) throw forbidden("not your reaction");
        },
      );
      return {};
    },
  };
}
