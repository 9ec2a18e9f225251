export declare function renderRouteTable(routes: unknown): string;
