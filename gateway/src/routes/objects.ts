import type { RouteTable } from "../define.js";
import type { Clients } from "../system.js";

/** Objects (`type:id`) and their batch import: reads open to any token, writes server only. */
export function objectRoutes(_r: RouteTable, _clients: Clients) {}
