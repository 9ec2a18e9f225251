import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  callerOf,
  conflict,
  forbidden,
  fromTimestamp,
  isReactionKind,
  limits,
  notFound,
  requireTenant,
  validationFailed,
  type CountSignal,
} from "@feeds/kit";
import type { ApplyReactionChangeRequest, AppliedChanges } from "@feeds/proto/feeds/feed/v1/feed";
import type { ActivityCache } from "./activity-cache.js";
import type { ActivityDoc, ActivityRepository } from "./activity-repository.js";
import type { Signals } from "./signals.js";

// Reaction counts as the engagement service changes them: one reaction added or removed is one
// atomic update of the activity (`reaction_counts.<kind>` and `version` by ±1), made once per
// change id (kit's outbox: the engagement service's pending change names it, and its relay may
// replay it), conditioned on the activity being live and, for a first reaction of a kind, on the
// activity carrying fewer kinds than the bound. Then the cache and the origin feed's signal, as
// every write of an activity.

export interface ReactionCountsDeps {
  activities: Pick<ActivityRepository, "changeReactionCount" | "get" | "pullApplied">;
  cache: Pick<ActivityCache, "putMany">;
  signals: Pick<Signals, "bump">;
  consoleSignal: Pick<CountSignal, "bump">;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Races lost to a kind leaving between the update and the read that explains it. */
const ATTEMPTS = 3;

/** Only our own processes (the engagement service) change reaction counts. */
function systemTenant(ctx: HandlerContext): string {
  const tenantId = requireTenant(ctx);
  if (callerOf(ctx).kind !== "system") throw forbidden("reaction counts are changed by the engagement service");
  return tenantId;
}

/** The activity as answered and cached: without the ids of changes in flight. */
function shown(doc: ActivityDoc): ActivityDoc {
  const { applied: _applied, ...rest } = doc;
  return rest;
}

const refused = () =>
  validationFailed([{ path: "kind", message: `the activity already carries ${limits.reactionKindsPerActivity} kinds of reaction` }]);

/**
 * ApplyReactionChange: the activity after the change (or as it is, for a change applied before).
 * NOT_FOUND when it is missing or deleted; VALIDATION_FAILED on `kind` for a new kind past the
 * bound; CONFLICT past `not_after` (the writer's deadline: the change is its outbox relay's then).
 */
export async function applyReactionChange(deps: ReactionCountsDeps, ctx: HandlerContext, req: ApplyReactionChangeRequest): Promise<ActivityDoc> {
  const tenantId = systemTenant(ctx);
  const { id, kind, changeId } = req;
  if (!isReactionKind(kind)) throw validationFailed([{ path: "kind", message: "must be a reaction kind" }]);
  if (req.delta !== 1 && req.delta !== -1) throw validationFailed([{ path: "delta", message: "must be 1 or -1" }]);
  if (!changeId) throw validationFailed([{ path: "change_id", message: "required" }]);
  if (!UUID.test(id)) throw notFound("activity not found");
  const notAfter = fromTimestamp(req.notAfter);
  if (notAfter && Date.now() > notAfter.getTime()) throw conflict("the change is past its writer's deadline: the outbox relay makes it");
  const delta = req.delta;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const updated = await deps.activities.changeReactionCount(tenantId, id, kind, delta, changeId, limits.reactionKindsPerActivity);
    if (updated) {
      const doc = shown(updated);
      // The origin feed's signal only: bumping every follower feed per reaction costs a write per
      // follower; their pages still show the new counts (activities come from the cache by id).
      await Promise.all([deps.cache.putMany([doc]), deps.signals.bump(tenantId, [doc.origin_feed]), deps.consoleSignal.bump(tenantId, 0)]);
      return doc;
    }
    // Nothing matched: say why (the one read of this call, off the common path).
    const current = await deps.activities.get(tenantId, id);
    if (!current || current.deleted_at) throw notFound("activity not found");
    if (current.applied?.includes(changeId)) return shown(current);
    const kinds = current.reaction_kinds ?? [];
    if (delta > 0 && !kinds.includes(kind) && kinds.length >= limits.reactionKindsPerActivity) throw refused();
    // A kind came or went between the update and the read: again.
  }
  throw conflict("the activity's reaction counts changed concurrently; retry");
}

/** ClearReactionChanges: forgets applied change ids the engagement service cleared. */
export async function clearReactionChanges(deps: Pick<ReactionCountsDeps, "activities">, ctx: HandlerContext, activities: AppliedChanges[]): Promise<void> {
  const tenantId = systemTenant(ctx);
  const items = activities.filter((a) => UUID.test(a.id) && a.changeIds.length > 0).map((a) => ({ id: a.id, changes: a.changeIds }));
  await deps.activities.pullApplied(tenantId, items);
}

/** SetReactionCounts: retired, kept in the service for wire compatibility. */
export function retiredSetReactionCounts(): never {
  throw new ConnectError("SetReactionCounts is retired: the engagement service calls ApplyReactionChange", Code.Unimplemented);
}
