import type { Db } from "mongodb";
import { ensureQueue, type Clients, type Logger, type Nats, type RedisConn, type ServiceModule } from "@feeds/kit";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";

/** The feed service: activities, feed entries, fan-out. */
export async function createFeedModule(deps: {
  db: Db;
  nats: Nats;
  redis: RedisConn;
  peers: () => Clients;
  log: Logger;
}): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "fanout");
  return { name: "feed", routes: (router) => router.service(FeedService, {}) };
}
