import type { ServiceImpl } from "@connectrpc/connect";
import type { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { createCommentRoutes, type CommentRoutesDeps } from "./comment-routes.js";
import { createKindRoutes } from "./kind-routes.js";
import { createModerationRoutes } from "./moderation-routes.js";
import { createReactionRoutes, type ReactionRoutesDeps } from "./reaction-routes.js";

/** The engagement service: reactions and the tenant's kinds, comments with replies, and the comment blocklist. */
export function createEngagementService(deps: {
  reactions: ReactionRoutesDeps;
  comments: CommentRoutesDeps;
  moderation: Parameters<typeof createModerationRoutes>[0]["moderation"];
  kinds: Parameters<typeof createKindRoutes>[0]["kinds"];
}): ServiceImpl<typeof EngagementService> {
  return {
    ...createReactionRoutes(deps.reactions),
    ...createKindRoutes({ kinds: deps.kinds }),
    ...createCommentRoutes(deps.comments),
    ...createModerationRoutes({ moderation: deps.moderation }),
  };
}
