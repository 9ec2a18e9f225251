import { fromRpcError, internal, type EventOutbox, type FeedEvent } from "@feeds/kit";
import type { CountBatcher } from "./count-batcher.js";
import type { CountedWrites } from "./counted-writes.js";
import type { OwnReactions } from "./own-reactions.js";

/** A failed count update is the system's (500, repaired by the relay); a deleted activity stays 404. */
const asCountFailure = (e: unknown) => (fromRpcError(e).code === "NOT_FOUND" ? e : internal(e));

/**
 * One reaction change (a reaction stored or removed: unique keys and single deletes need no lock)
 * with its event and its count. The count of the kind, made from the records under the
 * activity's lock (`count-batcher.ts`, `recounts.ts`), runs inside the write the outbox records,
 * so the record outlives it: a writer that dies anywhere in between leaves its record, and the
 * outbox relay recounts the activity before it asks whether the change happened (`events.ts`).
 * A count that fails in a live writer leaves a recount mark and answers 500. Own reactions are
 * invalidated before the answer. A caller that holds the activity's lock counts under it
 * (`change.count`) instead of through the batcher, which would wait for that lock.
 */
export function createReactionWrites(deps: {
  outbox: Pick<EventOutbox, "emit">;
  counts: Pick<CountBatcher, "count">;
  counted: Pick<CountedWrites, "mark">;
  own: Pick<OwnReactions, "invalidate">;
}) {
  const { outbox, counts, counted, own } = deps;
  return {
    async apply<T>(
      change: { tenantId: string; activityId: string; userId: string; kind: string; event: FeedEvent; count?: (record: string) => Promise<void> },
      write: () => Promise<T>,
      changed: (result: T) => boolean,
    ): Promise<T> {
      const { tenantId, activityId, userId, kind } = change;
      const count = change.count ?? ((record: string) => counts.count(tenantId, activityId, kind, record));
      let countFailure: unknown = null;
      const result = await outbox.emit(
        tenantId,
        [change.event],
        async (record) => {
          if (record === null) throw internal("a reaction change records its event");
          const r = await write();
          if (changed(r)) {
            await count(record).catch((e: unknown) => {
              // The change happened: its event still goes out; the count is repaired.
              countFailure = e;
            });
          }
          return r;
        },
        { publishIf: changed },
      );
      if (countFailure !== null) await counted.mark("reactions", tenantId, activityId).catch(() => undefined);
      // Whatever else failed: the change is stored. A retry of a call whose invalidation failed
      // invalidates again (also when nothing changed).
      await own.invalidate(tenantId, userId, activityId);
      if (countFailure !== null) throw asCountFailure(countFailure);
      return result;
    },
  };
}

export type ReactionWrites = ReturnType<typeof createReactionWrites>;
