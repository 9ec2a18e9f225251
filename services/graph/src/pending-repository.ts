import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { FeedEvent } from "@feeds/kit";

/** What must follow an edge change in the source feed: copy the target's history, or remove it. */
export type HistoryEffect = { kind: "copy"; limit: number } | { kind: "remove" };

/**
 * The outbox record of one edge change, written BEFORE the change: while it exists, the counts of
 * `feeds` may not show the change yet and the history effect and the events may not be published
 * yet. The writer deletes it once all are done; the relay finishes what a dead writer left.
 */
export interface PendingDoc {
  _id: string; // uuid: also what the published task's message id is derived from
  tenant_id: string;
  /** The feeds whose counts the change touches (both ends; every feed of a batch import). */
  feeds: string[];
  /** The edge a history effect is about, and the effect. */
  source?: string;
  target?: string;
  effect?: HistoryEffect;
  /** The events of the change (follow.created / follow.deleted), if it happens; none for batch imports. */
  events?: FeedEvent[];
  /** Set once the writer's counts were written but its publish failed: the relay only publishes. */
  counted?: true;
  /** Set with `counted` by a writer that saw its change happen: the relay publishes the events unasked. */
  confirmed?: true;
  at: Date;
}

/**
 * A record older than this is taken for one whose writer died: the relay recounts its feeds and
 * publishes its effect. A writer whose record got this old before its edge change writes a new one.
 */
export const STALE_MS = 5_000;

export type NewPending = Omit<PendingDoc, "_id" | "at" | "counted" | "confirmed">;

/** All MongoDB access for the graph's outbox; records are only inserted, marked and deleted by id. */
export function createPendingRepository(db: Db) {
  const pending: Collection<PendingDoc> = db.collection<PendingDoc>("follow_pending");
  return {
    ensureIndexes: () => pending.createIndex({ at: 1 }),

    async insert(p: NewPending): Promise<PendingDoc> {
      const doc: PendingDoc = { _id: randomUUID(), ...p, at: new Date() };
      await pending.insertOne(doc);
      return doc;
    },

    /**
     * Only publishing is left. `happened` (the writer's word on its change): true, its events go
     * out unasked; false, they are dropped; unset (the relay's recount), the relay asks the edges.
     */
    markCounted: (id: string, happened?: boolean) =>
      pending.updateOne(
        { _id: id },
        happened === undefined ? { $set: { counted: true } } : happened ? { $set: { counted: true, confirmed: true } } : { $set: { counted: true, events: [] } },
      ),

    /** The change's events, known once the writer holds its locks (before it writes). */
    setEvents: (id: string, events: FeedEvent[]) => pending.updateOne({ _id: id }, { $set: { events } }),

    done: (id: string) => pending.deleteOne({ _id: id }),

    /** Records older than `olderThan` whose counts were (`counted`) or were not written, oldest first. */
    stale: (olderThan: Date, counted: boolean, limit: number) =>
      pending
        .find({ at: { $lt: olderThan }, counted: counted ? true : { $exists: false } })
        .sort({ at: 1 })
        .limit(limit)
        .toArray(),
  };
}

export type PendingRepository = ReturnType<typeof createPendingRepository>;
