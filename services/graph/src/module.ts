import type { Db } from "mongodb";
import type { Logger, ServiceModule } from "@feeds/kit";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";

/** The graph service: follow edges, counts, suggestions. */
export async function createGraphModule(_deps: { db: Db; log: Logger }): Promise<ServiceModule> {
  return { name: "graph", routes: (router) => router.service(GraphService, {}) };
}
