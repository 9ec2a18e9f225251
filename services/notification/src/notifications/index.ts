import type { Db } from "mongodb";
import { createOutbox, ensureLiveStream, type Clients, type Logger, type Nats, type RedisConn } from "@feeds/kit";
import { createCountChanges } from "./changes.js";
import { createLiveNotifications } from "./live.js";
import { COUNTS, createCountsRepository } from "./counts.js";
import { createNotificationHandler } from "./handler.js";
import { createNotificationRepository, NOTIFICATIONS } from "./notification-repository.js";
import { createNotificationService } from "./routes.js";

/**
 * How long a mark's change is its writer's before the relay finishes it from its stamps: a mark
 * of every notification of a large feed takes a while, and a relay finishing a mark still
 * running would miss what it sets afterwards.
 */
export const MARK_GRACE_MS = 60_000;

/** The notification feeds: the RPCs, the notify worker's handler that fills them, and the counts' relays. */
export async function createNotifications(deps: { db: Db; nats: Nats; redis: RedisConn; peers: () => Pick<Clients, "users">; log: Logger; graceMs?: { inserts?: number; marks?: number } }) {
  // Owners' live streams take notification.added and notification.counts (docs/stream.md).
  await ensureLiveStream(deps.nats);
  const notifications = createNotificationRepository(deps.db);
  const counts = createCountsRepository(deps.db, deps.redis, deps.log);
  const inserts = createOutbox({ db: deps.db, nats: deps.nats, log: deps.log, graceMs: deps.graceMs?.inserts });
  const marks = createOutbox({ db: deps.db, nats: deps.nats, log: deps.log, graceMs: deps.graceMs?.marks ?? MARK_GRACE_MS });
  const changes = createCountChanges({ notifications, counts, inserts, marks, live: createLiveNotifications(deps.nats) });
  inserts.register(NOTIFICATIONS, (doc, change) => changes.finishNotification(doc as never, change));
  marks.register(COUNTS, (doc, change) => changes.finishMark(doc as never, change));
  await Promise.all([notifications.ensureIndexes(), inserts.ensureIndexes(), marks.ensureIndexes()]);
  return {
    service: createNotificationService({ notifications, counts, changes, peers: deps.peers }),
    handler: createNotificationHandler({ changes, log: deps.log }),
    /** The writes that move the counts (tests drive them directly). */
    changesForTests: changes,
    countsForTests: counts,
    /** Starts the outbox relays (any number of processes may run them: a relay claims what it finishes). */
    start() {
      inserts.startRelay();
      marks.startRelay();
    },
    async stop() {
      await Promise.all([inserts.stop(), marks.stop()]);
    },
    /** Waits for the clears queued so far (tests). */
    flush: async () => void (await Promise.all([inserts.flush(), marks.flush()])),
    /** One pass of both relays (tests). */
    relayOnce: async () => (await inserts.relayOnce()) + (await marks.relayOnce()),
  };
}
