import { randomUUID } from "node:crypto";
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
import type { Activity } from "@feeds/proto/feeds/feed/v1/feed";
import { actingUser } from "./acting-user.js";
import { isUuid, type Activities } from "./activities.js";
import { reactionEvent } from "./events.js";
import type { KindBound } from "./kind-bound.js";
import { reactionMessage } from "./messages.js";
import type { OwnReactions } from "./own-reactions.js";
import type { ReactionKinds } from "./reaction-kinds.js";
import { reactionKey, type ReactionDoc, type ReactionRepository } from "./reaction-repository.js";
import type { ReactionWrites } from "./reaction-writes.js";

type ReactionRpcs = "listOwnReactions" | "react" | "listReactions" | "unreact" | "deleteReaction";

export interface ReactionRoutesDeps {
  reactions: ReactionRepository;
  activities: Pick<Activities, "live">;
  writes: ReactionWrites;
  own: Pick<OwnReactions, "kindsOf" | "invalidate">;
  kinds: Pick<ReactionKinds, "declared">;
  bound: KindBound;
}

function checkKind(kind: string): string {
  if (!isReactionKind(kind)) {
    throw validationFailed([{ path: "kind", message: "must match ^[A-Za-z0-9_-]{1,64}$ (and not be __proto__, constructor or prototype)" }]);
  }
  return kind;
}

/** React, unreact, list reactions, and the caller's own reactions for feed reads. */
export function createReactionRoutes(deps: ReactionRoutesDeps): Pick<ServiceImpl<typeof EngagementService>, ReactionRpcs> {
  const { reactions, activities, writes, own, kinds, bound } = deps;

  /** Removes the reaction `find` answers, with its event and count (404 when there is none). */
  async function remove(tenantId: string, activity: Activity, find: () => Promise<ReactionDoc | null>): Promise<void> {
    const current = await find();
    if (!current) throw notFound("reaction not found");
    const { user_id: userId, kind } = current;
    const event = reactionEvent("reaction.deleted", current, activity.actor, new Date());
    const removed = await writes.apply({ tenantId, activityId: activity.id, userId, kind, event }, () => reactions.remove(current), (gone) => gone);
    if (!removed) throw notFound("reaction not found");
  }

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
      const [activity, declared] = await Promise.all([activities.live(tenantId, req.activityId), kinds.declared(tenantId)]);
      if (declared.length > 0 && !declared.includes(kind)) {
        throw validationFailed([{ path: "kind", message: "is not one of the tenant's reaction kinds" }]);
      }
      const existing = await reactions.get(tenantId, activity.id, userId, kind);
      if (existing) {
        // A retry of a call whose invalidation failed must still leave the cache right.
        await own.invalidate(tenantId, userId, activity.id);
        return { reaction: reactionMessage(existing), created: false };
      }
      const at = new Date();
      const doc: ReactionDoc = {
        _id: reactionKey(tenantId, activity.id, userId, kind),
        id: randomUUID(),
        tenant_id: tenantId,
        activity_id: activity.id,
        user_id: userId,
        kind,
        created_at: at,
      };
      const event = reactionEvent("reaction.added", doc, activity.actor, at);
      const stored = await bound.admit(tenantId, activity, kind, (count) =>
        writes.apply({ tenantId, activityId: activity.id, userId, kind, event, count }, () => reactions.insert(doc), (r) => r.created),
      );
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
      const activity = await activities.live(tenantId, req.activityId);
      await remove(tenantId, activity, () => reactions.get(tenantId, activity.id, userId, kind));
      return {};
    },

    async deleteReaction(req, ctx) {
      const tenantId = requireTenant(ctx);
      const caller = callerOf(ctx);
      if (caller.kind !== "user" && caller.kind !== "server" && caller.kind !== "system") throw forbidden("server or user token required");
      const r = isUuid(req.id) ? await reactions.byId(tenantId, req.id) : null;
      if (!r) throw notFound("reaction not found");
      if (caller.kind === "user" && r.user_id !== caller.userId) throw forbidden("not your reaction");
      const activity = await activities.live(tenantId, r.activity_id);
      await remove(tenantId, activity, () => reactions.byId(tenantId, r.id));
      return {};
    },
  };
}
