import type { RouteTable } from "../define.js";
import type { Clients } from "../system.js";

/** Activities and feed reads. */
export function feedRoutes(_r: RouteTable, _clients: Clients) {}
