import type { ServiceModule } from "@feeds/kit";
import { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";

/** The engagement service. Its RPCs arrive with their issue; today it serves its health check. */
export async function createEngagementModule(): Promise<ServiceModule> {
  return { name: "engagement", routes: (router) => router.service(EngagementService, {}) };
}
