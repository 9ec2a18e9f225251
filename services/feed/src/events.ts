import { activityJson, actorUserId, actorUserJson, newEvent, scope, type Clients, type FeedEvent } from "@feeds/kit";
import type { ActivityDoc } from "./activity-repository.js";
import { activityToProto } from "./routes.js";

// The feed's events (contract section 3): activity.added from the fan-out task (made durable by the
// add's pending change), activity.updated and activity.deleted pending in the activity's own
// update (kit's outbox), published after it by the writer or the relay. Their `data` is
// the Activity as a server-token feed read shows it (actor_user resolved, no own_reactions);
// activity.deleted adds `deleted_at`.

/** The Activity of a live event (docs/stream.md): actor_user is resolved by the gateway at delivery, as a read does. */
export const liveActivityJson = (doc: ActivityDoc, deleted = false): Record<string, unknown> =>
  activityJson(activityToProto(doc), { actorUser: null, withDeletedAt: deleted }) as unknown as Record<string, unknown>;

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
