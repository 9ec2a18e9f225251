import { ensureQueue, type Nats, type ServiceModule } from "@feeds/kit";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";

/**
 * The feed service. Its RPCs and its worker arrive with their issue; today it serves its health
 * check and owns the `fanout` work queue and dead-letter stream, created at start-up.
 */
export async function createFeedModule(deps: { nats: Nats }): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "fanout");
  return { name: "feed", routes: (router) => router.service(FeedService, {}) };
}
