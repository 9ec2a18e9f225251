import type { ServiceImpl } from "@connectrpc/connect";
import type { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { createCommentRoutes, type CommentRoutesDeps } from "./comment-routes.js";
import { createModerationRoutes } from "./moderation-routes.js";
import { createReactionRoutes, type ReactionRoutesDeps } from "./reaction-routes.js";

/** The engagement service: reactions, comments with replies, and the comment blocklist. */
export function createEngagementService(deps: {
  reactions: ReactionRoutesDeps;
  comments: CommentRoutesDeps;
  moderation: Parameters<typeof createModerationRoutes>[0]["moderation"];
}): ServiceImpl<typeof EngagementService> {
  return { ...createReactionRoutes(deps.reactions), ...createCommentRoutes(deps.comments), ...createModerationRoutes({ moderation: deps.moderation }) };
}
