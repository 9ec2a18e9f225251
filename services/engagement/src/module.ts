import type { Db } from "mongodb";
import type { ServiceModule } from "@feeds/kit";
import { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { createReactionRepository } from "./reaction-repository.js";
import { createEngagementService } from "./routes.js";

/** The engagement service: reactions (the caller's own, for feed enrichment, so far). */
export async function createEngagementModule(deps: { db: Db }): Promise<ServiceModule> {
  const reactions = createReactionRepository(deps.db);
  await reactions.ensureIndexes();
  const impl = createEngagementService({ reactions });
  return { name: "engagement", routes: (router) => router.service(EngagementService, impl) };
}
