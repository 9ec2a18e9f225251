import type { ServiceImpl } from "@connectrpc/connect";
import { isId, requireTenant } from "@feeds/kit";
import type { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import type { ReactionRepository } from "./reaction-repository.js";

export function createEngagementService(deps: { reactions: ReactionRepository }): ServiceImpl<typeof EngagementService> {
  return {
    async listOwnReactions(req, ctx) {
      const tenantId = requireTenant(ctx);
      const ids = [...new Set(req.activityIds)].slice(0, 1000);
      if (!isId(req.userId) || !ids.length) return { reactions: [] };
      const kinds = new Map<string, string[]>();
      for (const r of await deps.reactions.ofUser(tenantId, req.userId, ids)) {
        const list = kinds.get(r.activity_id) ?? [];
        if (!list.includes(r.kind)) list.push(r.kind);
        kinds.set(r.activity_id, list);
      }
      return { reactions: [...kinds].map(([activityId, k]) => ({ activityId, kinds: k.sort() })) };
    },
  };
}
