import type { ServiceImpl } from "@connectrpc/connect";
import { requireServer } from "@feeds/kit";
import type { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import type { Moderation } from "./blocklist.js";

/** The tenant's comment blocklist: read and replaced by its server (user tokens: 403). */
export function createModerationRoutes(deps: { moderation: Pick<Moderation, "get" | "set"> }): Pick<ServiceImpl<typeof EngagementService>, "setBlocklist" | "getBlocklist"> {
  return {
    async setBlocklist(req, ctx) {
      return { terms: await deps.moderation.set(requireServer(ctx), req.terms) };
    },
    async getBlocklist(_req, ctx) {
      return { terms: await deps.moderation.get(requireServer(ctx)) };
    },
  };
}
