import type { RouteTable } from "../define.js";
import type { Clients } from "../system.js";

/** Promoted activities: create, list, retract (server only). */
export function promotedRoutes(_r: RouteTable, _clients: Clients) {}
