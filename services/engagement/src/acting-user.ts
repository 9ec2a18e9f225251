import type { HandlerContext } from "@connectrpc/connect";
import { callerOf, forbidden, isId, validationFailed } from "@feeds/kit";

/**
 * The user a reaction or comment call acts as. A user token acts as itself (naming another user
 * is FORBIDDEN); a server token (or one of our processes) must name the user in `user_id`.
 */
export function actingUser(ctx: HandlerContext, given: string): string {
  const c = callerOf(ctx);
  if (c.kind === "user") {
    if (given && given !== c.userId) throw forbidden("a user token acts only as its own user");
    return c.userId;
  }
  if (c.kind !== "server" && c.kind !== "system") throw forbidden("server or user token required");
  if (!given) throw validationFailed([{ path: "user_id", message: "required for server tokens" }]);
  if (!isId(given)) throw validationFailed([{ path: "user_id", message: "must match ^[A-Za-z0-9_\\-.@]{1,128}$" }]);
  return given;
}
