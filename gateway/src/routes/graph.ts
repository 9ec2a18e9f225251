import type { RouteTable } from "../define.js";
import type { Clients } from "../system.js";

/** Follow, unfollow, follows, followers, stats, suggestions and batch follows. */
export function graphRoutes(_r: RouteTable, _clients: Clients) {}
