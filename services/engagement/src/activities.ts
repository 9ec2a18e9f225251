import { notFound, scope, type Clients } from "@feeds/kit";
import type { Activity } from "@feeds/proto/feeds/feed/v1/feed";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Activity, reaction and comment ids are UUIDs (lower case, as the gateway passes them). */
export const isUuid = (s: string): boolean => UUID.test(s);

/** The feed service as the engagement service uses it: live activities and their reaction counts. */
export function createActivities(peers: () => Pick<Clients, "feed">) {
  const call = (tenantId: string) => scope({ tenantId, caller: { kind: "system" } });
  return {
    /** The activity; NOT_FOUND when it is missing or soft-deleted. */
    async live(tenantId: string, id: string): Promise<Activity> {
      if (!isUuid(id)) throw notFound("activity not found");
      const res = await peers().feed.getActivity({ id }, call(tenantId));
      if (!res.activity) throw notFound("activity not found");
      return res.activity;
    },
    /** Stores counts (every kind when `complete`) made after `changes` changes; NOT_FOUND when the activity is gone. */
    async setCounts(tenantId: string, id: string, counts: Record<string, number>, opts: { complete: boolean; changes: number; exact: boolean }): Promise<void> {
      const big = Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, BigInt(n)]));
      await peers().feed.setReactionCounts({ id, counts: big, ...opts }, call(tenantId));
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
