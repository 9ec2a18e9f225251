import { limits, validationFailed } from "@feeds/kit";
import type { Activity } from "@feeds/proto/feeds/feed/v1/feed";
import type { Activities } from "./activities.js";
import type { CountedWrites } from "./counted-writes.js";
import type { Recounts } from "./recounts.js";

/** Stores a new reaction; `count`, when given, counts it under the lock the caller holds. */
export type ReactionWrite<T> = (count?: (record: string) => Promise<void>) => Promise<T>;

const carries = (a: Activity, kind: string) => Object.hasOwn(a.reactionCounts, kind);
/** The activity has no slot left for `kind` (kinds counted 0 have left `reaction_counts`). */
const full = (a: Activity, kind: string) => !carries(a, kind) && Object.keys(a.reactionCounts).length >= limits.reactionKindsPerActivity;
const refused = () =>
  validationFailed([{ path: "kind", message: `the activity already carries ${limits.reactionKindsPerActivity} kinds of reaction` }]);

/**
 * At most `limits.reactionKindsPerActivity` distinct kinds per activity. A reaction of a kind the
 * activity carries goes straight to its write (the hot path, counted through the batcher). The
 * first reaction of a new kind is checked again, stored and counted under the activity's count
 * lock, so concurrent first reactions of new kinds, on any replica, see each other's counts.
 * What is left: a reaction of a carried kind whose last reaction is removed and counted while it
 * is in flight, and a first reaction whose count failed (until the relay recounts), each bring
 * back one kind the stored counts did not show.
 */
export function createKindBound(deps: {
  activities: Pick<Activities, "live">;
  counted: Pick<CountedWrites, "withLock">;
  recounts: Pick<Recounts, "reactionKinds">;
}) {
  const { activities, counted, recounts } = deps;
  return {
    /** Runs `write` for a new reaction of `kind` on `activity` (as read before), or throws 400 on `kind`. */
    async admit<T>(tenantId: string, activity: Activity, kind: string, write: ReactionWrite<T>): Promise<T> {
      if (carries(activity, kind)) return write();
      if (full(activity, kind)) throw refused();
      return counted.withLock("reactions", tenantId, activity.id, async (lease) => {
        if (full(await activities.live(tenantId, activity.id), kind)) throw refused();
        return write((record) => recounts.reactionKinds(tenantId, activity.id, [kind], [record], lease));
      });
    },
  };
}

export type KindBound = ReturnType<typeof createKindBound>;
