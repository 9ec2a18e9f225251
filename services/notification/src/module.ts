import { ensureQueue, type Nats, type ServiceModule } from "@feeds/kit";
import { NotificationService } from "@feeds/proto/feeds/notification/v1/notification";

/**
 * The notification service. Its RPCs and its worker arrive with their issue; today it serves its health
 * check and owns the `notify` work queue and dead-letter stream, created at start-up.
 */
export async function createNotificationModule(deps: { nats: Nats }): Promise<ServiceModule> {
  await ensureQueue(deps.nats, "notify");
  return { name: "notification", routes: (router) => router.service(NotificationService, {}) };
}
