import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { notFound, scope, type AppliedIds, type Clients } from "@feeds/kit";
import { AppliedChangesSchema, type Activity } from "@feeds/proto/feeds/feed/v1/feed";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Activity, reaction and comment ids are UUIDs (lower case, as the gateway passes them). */
export const isUuid = (s: string): boolean => UUID.test(s);

/** Actors remembered per process: an activity's actor never changes. */
const ACTORS_KEPT = 10_000;

/** The outbox target of a reaction change: the activity, under its tenant (`tenant/activity`). */
export const ACTIVITIES = "activities";
export const activityTarget = (tenantId: string, activityId: string) => ({ collection: ACTIVITIES, id: `${tenantId}/${activityId}` });

/** The feed service as the engagement service uses it: live activities and their reaction counts. */
export function createActivities(peers: () => Pick<Clients, "feed">) {
  const call = (tenantId: string) => scope({ tenantId, caller: { kind: "system" } });
  const actors = new Map<string, string>();

  async function live(tenantId: string, id: string): Promise<Activity> {
    if (!isUuid(id)) throw notFound("activity not found");
    const res = await peers().feed.getActivity({ id }, call(tenantId));
    if (!res.activity) throw notFound("activity not found");
    const key = `${tenantId}/${id}`;
    if (!actors.has(key)) {
      if (actors.size >= ACTORS_KEPT) actors.delete(actors.keys().next().value as string);
      actors.set(key, res.activity.actor);
    }
    return res.activity;
  }

  return {
    /** The activity; NOT_FOUND when it is missing or soft-deleted. */
    live,

    /**
     * The activity's actor (for the events' routing meta), remembered once read; NOT_FOUND when
     * it is missing or deleted at that read. A remembered actor says nothing about liveness: the
     * count update that follows answers that.
     */
    async actorOf(tenantId: string, id: string): Promise<string> {
      return actors.get(`${tenantId}/${id}`) ?? (await live(tenantId, id)).actor;
    },

    /**
     * One reaction change made once (change id `changeId`): NOT_FOUND when the activity is not
     * live, VALIDATION_FAILED on kind past the bound of kinds, CONFLICT past `notAfter`.
     */
    async apply(tenantId: string, id: string, change: { kind: string; delta: 1 | -1; changeId: string; notAfter?: number }): Promise<void> {
      if (!isUuid(id)) throw notFound("activity not found");
      const { kind, delta, changeId, notAfter } = change;
      await peers().feed.applyReactionChange(
        { id, kind, delta, changeId, ...(notAfter !== undefined ? { notAfter: timestampFromMs(notAfter) } : {}) },
        call(tenantId),
      );
    },

    /** The outbox's clear of applied ids on activities (targets `tenant/activity`), one call per tenant. */
    async clearApplied(applied: AppliedIds[]): Promise<void> {
      const byTenant = new Map<string, AppliedIds[]>();
      for (const a of applied) {
        const [tenantId = "", activityId = ""] = a.id.split("/");
        byTenant.set(tenantId, [...(byTenant.get(tenantId) ?? []), { id: activityId, changes: a.changes }]);
      }
      await Promise.all(
        [...byTenant].map(([tenantId, items]) =>
          peers().feed.clearReactionChanges(
            { activities: items.map((i) => create(AppliedChangesSchema, { id: i.id, changeIds: i.changes })) },
            call(tenantId),
          ),
        ),
      );
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
