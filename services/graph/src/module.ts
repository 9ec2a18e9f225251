import type { ServiceModule } from "@feeds/kit";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";

/** The graph service. Its RPCs arrive with their issue; today it serves its health check. */
export async function createGraphModule(): Promise<ServiceModule> {
  return { name: "graph", routes: (router) => router.service(GraphService, {}) };
}
