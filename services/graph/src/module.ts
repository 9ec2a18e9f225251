import type { Db } from "mongodb";
import type { Logger, ServiceModule } from "@feeds/kit";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";
import { createFollowRepository } from "./follow-repository.js";
import { createGraphService } from "./routes.js";

/** The graph service: follow edges, counts, suggestions. */
export async function createGraphModule(deps: { db: Db; log: Logger }): Promise<ServiceModule> {
  const follows = createFollowRepository(deps.db);
  await follows.ensureIndexes();
  const impl = createGraphService({ follows });
  return { name: "graph", routes: (router) => router.service(GraphService, impl) };
}
