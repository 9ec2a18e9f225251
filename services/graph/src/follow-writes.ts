import type { FeedEvent, Logger } from "@feeds/kit";
import type { CountRepository } from "./count-repository.js";
import { edgeDeltas, type Counter } from "./counter.js";
import { followCreated, followDeleted } from "./follow-events.js";
import type { CountSide, EdgeOutcome, FollowDoc, FollowRepository } from "./follow-repository.js";
import { STALE_MS, type HistoryEffect, type NewPending, type PendingDoc, type PendingRepository } from "./pending-repository.js";
import type { HistoryTasks } from "./tasks.js";
import type { FollowerSets } from "./follower-sets.js";

/** A batch import counts a feed by delta under its lock from this many edges on a side it changes; smaller ones it recounts. */
const BIG_FEED = 1000;

export interface FollowWritesDeps {
  follows: Pick<FollowRepository, "insert" | "insertMany" | "remove" | "find">;
  counts: Pick<CountRepository, "getMany">;
  pending: Pick<PendingRepository, "insert" | "markCounted" | "done" | "setEvents">;
  counter: Counter;
  tasks: Pick<HistoryTasks, "publish">;
  /** To the notify queue (kit's `publishEvents`). */
  publishEvents: (events: FeedEvent[]) => Promise<void>;
  /** The fan-out's cached follower sets, invalidated after each edge change. */
  followerSets: Pick<FollowerSets, "invalidate">;
  log: Logger;
}

/** Called right before the edge write, with the change's events once they are known there. */
type Fresh = (events?: FeedEvent[]) => Promise<void>;

/**
 * Every edge change, one protocol: the outbox record (with the change's events) first, then the
 * edge change with its counts (`counter.ts`), then the history task and, if the edge really
 * appeared or disappeared, the events; the record goes once all are done. A failure anywhere
 * leaves the record, and the relay recounts and publishes (events only once the edges confirm
 * them). Follows, followers and stats show the change before the call answers (read your
 * writes); the source feed's history and the notifications follow the queues.
 */
export function createFollowWrites(deps: FollowWritesDeps) {
  const { follows, counts, pending, counter, tasks, log } = deps;

  async function change<T>(
    tenantId: string,
    record: Omit<NewPending, "tenant_id">,
    run: (fresh: Fresh) => Promise<T>,
    happened: (result: T) => boolean = () => true,
  ) {
    let rec = record;
    let p: PendingDoc = await pending.insert({ tenant_id: tenantId, ...rec });
    // The relay may take a record this old for a dead writer's and finish it before our write
    // lands, so the write goes under a fresh one.
    const fresh: Fresh = async (events) => {
      if (events) rec = { ...rec, events };
      if (Date.now() - p.at.getTime() > STALE_MS / 2) p = await pending.insert({ tenant_id: tenantId, ...rec });
      else if (events) {
        await pending.setEvents(p._id, events);
        p = { ...p, events };
      }
    };
    const result = await run(fresh);
    // The fan-out's cached follower sets of the feeds changed. A failure (Redis down) fails the
    // call and leaves the record: the relay recounts its feeds and invalidates them again.
    if (happened(result)) await deps.followerSets.invalidate(tenantId, rec.feeds);
    const events = happened(result) ? (p.events ?? []) : [];
    if (p.effect || events.length) {
      try {
        await tasks.publish(p, "writer");
        if (events.length) await deps.publishEvents(events);
      } catch (err) {
        // The edge and the counts are written: answer, and let the relay publish when NATS is back.
        log.warn({ err: String(err), pending: p._id }, "history task and events deferred to the relay");
        await pending.markCounted(p._id, events.length > 0).catch(() => undefined);
        return result;
      }
    }
    await pending.done(p._id).catch((err: unknown) => log.warn({ err: String(err), pending: p._id }, "outbox record left to the relay"));
    return result;
  }

  const edgeRecord = (source: string, target: string, effect: HistoryEffect | null) => ({
    feeds: [source, target],
    source,
    target,
    ...(effect ? { effect } : {}),
  });

  /** Batch import: feeds with a big changed side move by delta under their locks, the others are recounted after. */
  async function importEdges(tenantId: string, edges: { source: string; target: string }[], fresh: Fresh) {
    const sides = new Map<string, Set<CountSide>>();
    const touch = (feed: string, side: CountSide) => sides.set(feed, (sides.get(feed) ?? new Set<CountSide>()).add(side));
    for (const e of edges) {
      touch(e.source, "following_count");
      touch(e.target, "follower_count");
    }
    const stored = await counts.getMany(tenantId, [...sides.keys()]);
    const big = new Set([...sides].filter(([feed, s]) => [...s].some((side) => (stored.get(feed)?.[side] ?? 0) >= BIG_FEED)).map(([feed]) => feed));
    let created: { source: string; target: string }[] = [];
    const outcome = await counter.apply(tenantId, [...big], async () => {
      await fresh();
      const result = await follows.insertMany(tenantId, edges);
      created = edges.filter((_, i) => result[i] === "created");
      return { result, deltas: new Map([...edgeDeltas(created, 1)].filter(([feed]) => big.has(feed))) };
    });
    const small = [...new Set(created.flatMap((e) => [e.source, e.target]))].filter((feed) => !big.has(feed));
    await counter.recount(tenantId, small, (feed) => [...(sides.get(feed) ?? [])]);
    return outcome;
  }

  return {
    /**
     * Creates the edge (or answers the existing one) and copies up to `copyLimit` of the target's
     * newest activities; `follow.created` only when the edge is new.
     */
    follow(tenantId: string, source: string, target: string, copyLimit: number): Promise<{ doc: FollowDoc; created: boolean }> {
      const at = new Date();
      const record = { ...edgeRecord(source, target, copyLimit > 0 ? { kind: "copy", limit: copyLimit } : null), events: [followCreated(tenantId, source, target, at)] };
      return change(
        tenantId,
        record,
        (fresh) =>
          counter.apply(tenantId, [source, target], async () => {
            await fresh();
            const r = await follows.insert(tenantId, source, target, at);
            return { result: r, deltas: edgeDeltas(r.created ? [{ source, target }] : [], 1) };
          }),
        (r) => r.created,
      );
    },

    /**
     * Removes the edge; what came from the target leaves the source feed unless `keepHistory`;
     * `follow.deleted` only when there was an edge. The edge is read under the count locks, which
     * every follow and unfollow of the pair holds while it writes, so the event names the edge removed.
     */
    unfollow: (tenantId: string, source: string, target: string, keepHistory: boolean): Promise<boolean> =>
      change(
        tenantId,
        edgeRecord(source, target, keepHistory ? null : { kind: "remove" }),
        (fresh) =>
          counter.apply(tenantId, [source, target], async () => {
            const edge = await follows.find(tenantId, source, target);
            await fresh(edge ? [followDeleted(tenantId, edge)] : undefined);
            const removed = await follows.remove(tenantId, source, target);
            return { result: removed, deltas: edgeDeltas(removed ? [{ source, target }] : [], -1) };
          }),
        (removed) => removed,
      ),

    /** Batch import: quiet (no history effect). */
    importMany: (tenantId: string, edges: { source: string; target: string }[]): Promise<EdgeOutcome[]> =>
      change(tenantId, { feeds: [...new Set(edges.flatMap((e) => [e.source, e.target]))] }, (fresh) => importEdges(tenantId, edges, fresh)),
  };
}

export type FollowWrites = ReturnType<typeof createFollowWrites>;
