import type { Db } from "mongodb";
import type { Clients, Logger, RedisConn } from "@feeds/kit";
import { createNotificationHandler } from "./handler.js";
import { createNotificationRepository } from "./notification-repository.js";
import { createNotificationService } from "./routes.js";
import { createNotificationSignal } from "./signal.js";

/** The notification feeds: the RPCs, and the notify worker's handler that fills them. */
export async function createNotifications(deps: { db: Db; redis: RedisConn; peers: () => Pick<Clients, "users">; log: Logger }) {
  const notifications = createNotificationRepository(deps.db);
  await notifications.ensureIndexes();
  const signal = createNotificationSignal({ redis: deps.redis, log: deps.log });
  return {
    service: createNotificationService({ notifications, signal, peers: deps.peers }),
    handler: createNotificationHandler({ notifications, signal, log: deps.log }),
  };
}
