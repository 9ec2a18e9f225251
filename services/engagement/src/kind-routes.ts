import type { ServiceImpl } from "@connectrpc/connect";
import { requireServer } from "@feeds/kit";
import type { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import type { ReactionKinds } from "./reaction-kinds.js";

/** The tenant's reaction kinds: read and replaced by its server (user tokens: 403). */
export function createKindRoutes(deps: { kinds: Pick<ReactionKinds, "get" | "set"> }): Pick<ServiceImpl<typeof EngagementService>, "setReactionKinds" | "getReactionKinds"> {
  return {
    async setReactionKinds(req, ctx) {
      return { kinds: await deps.kinds.set(requireServer(ctx), req.kinds) };
    },
    async getReactionKinds(_req, ctx) {
      return { kinds: await deps.kinds.get(requireServer(ctx)) };
    },
  };
}
