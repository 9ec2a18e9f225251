import {
  activityJson,
  actorUserId,
  actorUserJson,
  createEventOutbox,
  newEvent,
  scope,
  type Clients,
  type FeedEvent,
  type Logger,
  type Nats,
} from "@feeds/kit";
import type { Db } from "mongodb";
import type { ActivityDoc, ActivityRepository } from "./activity-repository.js";
import { activityToProto } from "./routes.js";

// The feed's events (contract section 3): activity.added from the fan-out task (already durable),
// activity.updated and activity.deleted through the feed outbox beside the write. Their `data` is
// the Activity as a server-token feed read shows it (actor_user resolved, no own_reactions);
// activity.deleted adds `deleted_at`.

export type ActivityEventType = "activity.added" | "activity.updated" | "activity.deleted";

export function createActivityEvents(deps: { peers: () => Pick<Clients, "users"> }) {
  async function actorUser(tenantId: string, actor: string) {
    const uid = actorUserId(actor);
    if (uid === null) return null;
    const res = await deps.peers().users.getUsers({ ids: [uid] }, scope({ tenantId, caller: { kind: "system" } }));
    const u = res.users[0];
    return u ? actorUserJson(u) : null;
  }

  return {
    /** The event of `doc` as it is after the act (`at`: the act's time). */
    async of(type: ActivityEventType, doc: ActivityDoc, at: Date, id?: string): Promise<FeedEvent> {
      const view = { actorUser: await actorUser(doc.tenant_id, doc.actor), withDeletedAt: type === "activity.deleted" };
      const data = activityJson(activityToProto(doc), view) as unknown as Record<string, unknown>;
      return newEvent(type, doc.tenant_id, data, { at, ...(id ? { id } : {}) });
    },
  };
}

export type ActivityEvents = ReturnType<typeof createActivityEvents>;

/**
 * The feed outbox: patch and delete record their event before the write. The relay publishes a
 * dead writer's event only when the activity shows the write (its version, its tombstone).
 */
export function createFeedOutbox(deps: { db: Db; nats: Nats; log: Logger; activities: ActivityRepository }) {
  return createEventOutbox({
    db: deps.db,
    nats: deps.nats,
    log: deps.log,
    collection: "feed_outbox",
    async confirm(event) {
      const doc = await deps.activities.get(event.tenant_id, String(event.data.id));
      if (!doc) return false;
      if (event.type === "activity.deleted") return doc.deleted_at !== null;
      return doc.version >= Number(event.data.version);
    },
  });
}
