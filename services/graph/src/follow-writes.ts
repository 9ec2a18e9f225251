import { randomUUID } from "node:crypto";
import {
  eventMessages,
  internal,
  publishOptions,
  type Logger,
  type Nats,
  type Outbox,
  type OutboxMessage,
  type OutboxTarget,
  type PendingChange,
} from "@feeds/kit";
import { COUNTS, countKey, type CountMove, type CountRepository } from "./count-repository.js";
import { followCreated, followDeleted } from "./follow-events.js";
import { edgeKey, edgeOf, type EdgeOutcome, type FollowDoc, type FollowRepository } from "./follow-repository.js";
import type { FollowerSets } from "./follower-sets.js";
import type { HistoryTasks } from "./tasks.js";

/** The collection of the edges, whose documents carry their pending changes (kit's outbox). */
export const FOLLOWS = "follows";

/**
 * What a pending change of an edge owes, for whoever finishes it:
 * - `follow`: the edge appeared: +1 `following_count` of the source, +1 `follower_count` of the
 *   target (messages: its history copy task, follow.created; none for a batch import);
 * - `copy`: a repeat follow: its history copy task only;
 * - `unfollow`: the edge goes: -1 each, its history removal task (unless keep_history) and
 *   follow.deleted (id `event`, at the change's time, data from the edge), then the edge is deleted.
 */
/**
 * How long a change of an edge is its writer's before the relay may take it for a dead writer's
 * (the outbox's grace). Longer than kit's default: an edge writer under load (a busy storage, an
 * unfollow waiting for the follow it undoes) can take seconds to its count moves, and a relay
 * that finished and cleared its change meanwhile would let its late move count twice (the clear
 * takes the change id off the counts). A dead writer's history copy and events come this much
 * later; a live writer's are published right after its write, whatever this is.
 */
export const FOLLOW_GRACE_MS = 10_000;

export type ChangeData = { kind: "follow" } | { kind: "copy" } | { kind: "unfollow"; event: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How often a write waiting for another writer's change on the same edge looks again. */
const POLL_MS = 20;

export interface FollowWritesDeps {
  follows: Pick<FollowRepository, "insert" | "insertMany" | "find" | "recordOnLive" | "markRemoval" | "deleteMarked" | "pending">;
  counts: Pick<CountRepository, "apply" | "hold">;
  outbox: Pick<Outbox, "change" | "forInsert" | "forUpdate" | "settle" | "discard">;
  nats: Nats;
  tasks: HistoryTasks;
  /** The fan-out's cached follower sets, invalidated after each edge change. */
  followerSets: Pick<FollowerSets, "invalidate">;
  log: Logger;
  /** How long a change is its writer's: the outbox's grace (FOLLOW_GRACE_MS; tests shorten it). */
  graceMs?: number;
}

const dataOf = (c: PendingChange) => c.data as ChangeData | undefined;

/**
 * Every edge change, one protocol (kit's outbox): the edge document carries the change it owes
 * (counts, history task, event) from the same single-document write that changes the edge; the
 * counts move by once-only `$inc`s keyed by the change id; then the messages are published and
 * the change cleared. A writer that dies leaves the change on the edge, and the outbox relay runs
 * `finish`, which replays what the writer may not have done (a replay of a move made moves
 * nothing). Follows, followers and stats show the change before the call answers.
 *
 * An unfollow marks the edge as being removed (`removing`, with its change) and from then on
 * the edge is gone for every read; the document goes once the removal's messages are out (with
 * NATS down it stays, marked, until the relay publishes them).
 */
export function createFollowWrites(deps: FollowWritesDeps) {
  const { follows, counts, outbox, nats, tasks, log } = deps;
  const graceMs = deps.graceMs ?? FOLLOW_GRACE_MS;
  const stale = (c: PendingChange) => Date.now() - c.at.getTime() > graceMs;

  const countTargets = (t: string, source: string, target: string): OutboxTarget[] => [
    { collection: COUNTS, id: countKey(t, source) },
    { collection: COUNTS, id: countKey(t, target) },
  ];
  const moves = (change: string, source: string, target: string, by: 1 | -1): CountMove[] => [
    { change, feed: source, field: "following_count", by },
    { change, feed: target, field: "follower_count", by },
  ];

  /** Publishes `messages` with the trace context of the change they belong to (its writer's). */
  async function publish(messages: readonly OutboxMessage[], trace: Record<string, string> | undefined): Promise<void> {
    for (const m of messages) await nats.js.publish(m.subject, new TextEncoder().encode(m.data), publishOptions(m.msgId, trace));
  }

  /** The messages of a removal: its own (the history task) and follow.deleted of the edge. */
  const removalMessages = (edge: FollowDoc, change: PendingChange, event: string) => [
    ...change.messages,
    ...eventMessages(nats, [followDeleted(edge.tenant_id, edge, { id: event, at: change.at })]),
  ];

  /**
   * Before an edge goes: the follows pending on it (`changes`, as read with the mark) must have
   * their counts in. A change still pending is its writer's while young (wait until its moves are
   * in: the counts hold its id, or it was cleared, which comes after them) and a dead writer's
   * once stale (replay its moves, publish its messages).
   */
  async function followsIn(edge: FollowDoc, changes: readonly PendingChange[]): Promise<void> {
    const feeds = [edge.source_feed, edge.target_feed];
    for (const c of changes) {
      if (dataOf(c)?.kind !== "follow") continue;
      while (await follows.pending(edge._id, c.id)) {
        if (!stale(c)) {
          if (await counts.hold(edge.tenant_id, feeds, c.id)) break;
          await sleep(POLL_MS);
          continue;
        }
        await counts.apply(edge.tenant_id, moves(c.id, edge.source_feed, edge.target_feed, 1));
        await publish(c.messages, c.trace);
        outbox.discard(FOLLOWS, edge._id, c);
        break;
      }
    }
  }

  /**
   * The rest of a removal once the edge is marked: counts, messages, then the document and the
   * cached follower sets. Answers false when the messages could not be published (the marked
   * edge stays for the relay; reads no longer show it). Idempotent: the relay runs it again.
   */
  async function removal(edge: FollowDoc, change: PendingChange): Promise<boolean> {
    const data = dataOf(change);
    if (data?.kind !== "unfollow") throw internal(new Error(`change ${change.id} is no removal`));
    const { tenant_id: t, source_feed: source, target_feed: target } = edge;
    await followsIn(edge, (edge.outbox ?? []).filter((c) => c.id !== change.id));
    await counts.apply(t, moves(change.id, source, target, -1));
    try {
      await publish(removalMessages(edge, change, data.event), change.trace);
    } catch (err) {
      log.warn({ err: String(err), change: change.id }, "unfollow messages left to the outbox relay");
      await deps.followerSets.invalidate(t, [source, target]);
      return false;
    }
    await follows.deleteMarked(edge._id, change.id);
    // After the delete: a fan-out pass that started before it cannot store the old set.
    await deps.followerSets.invalidate(t, [source, target]);
    // The change's ids leave the counts once its edge is gone (nothing can replay it).
    outbox.discard(FOLLOWS, edge._id, change);
    return true;
  }

  /** A follow found the edge being removed: waits until it is gone, finishing the removal if its writer died. */
  async function awaitRemoval(edge: FollowDoc): Promise<void> {
    const deadline = Date.now() + 2 * graceMs + 1000;
    for (let e: FollowDoc | null = edge; e?.removing; e = await follows.find(edge._id)) {
      const change = e.outbox?.find((c) => c.id === e?.removing);
      if (change && stale(change)) {
        if (!(await removal(e, change))) throw internal(new Error("the removal of this edge waits for its messages to be published"));
        return;
      }
      if (Date.now() > deadline) throw internal(new Error("the removal of this edge is not finished"));
      await sleep(POLL_MS);
    }
  }

  /** The edge of a repeat follow (null when it is gone); records and publishes its history copy task. */
  async function repeat(t: string, id: string, source: string, target: string, copyLimit: number): Promise<FollowDoc | null> {
    if (copyLimit <= 0) return follows.find(id);
    const cid = randomUUID();
    const change = outbox.change([tasks.message(cid, { t, s: source, g: target, k: "copy", n: copyLimit })], { id: cid, data: { kind: "copy" } });
    const pending = outbox.forUpdate(change);
    const edge = await follows.recordOnLive(id, { ...pending, $set: { ...pending.$set, copy_limit: copyLimit } });
    if (!edge) return follows.find(id);
    await outbox.settle(FOLLOWS, id, change);
    return edge;
  }

  return {
    /**
     * Creates the edge (or answers the existing one) and copies up to `copyLimit` of the target's
     * newest activities (a repeat copies too); `follow.created` only when the edge is new.
     */
    async follow(t: string, source: string, target: string, copyLimit: number): Promise<{ doc: FollowDoc; created: boolean }> {
      const id = edgeKey(t, edgeOf(source, target));
      for (let attempt = 0; attempt < 3; attempt++) {
        const at = new Date();
        const cid = randomUUID();
        const messages = [
          ...(copyLimit > 0 ? [tasks.message(cid, { t, s: source, g: target, k: "copy", n: copyLimit })] : []),
          ...eventMessages(nats, [followCreated(t, source, target, at)]),
        ];
        const change = outbox.change(messages, { id: cid, at, targets: countTargets(t, source, target), data: { kind: "follow" } });
        const doc: FollowDoc = { _id: id, tenant_id: t, source_feed: source, target_feed: target, created_at: at, ...(copyLimit > 0 ? { copy_limit: copyLimit } : {}) };
        if (await follows.insert({ ...doc, ...outbox.forInsert(change) })) {
          await Promise.all([counts.apply(t, moves(cid, source, target, 1)), deps.followerSets.invalidate(t, [source, target])]);
          await outbox.settle(FOLLOWS, id, change);
          return { doc, created: true };
        }
        const existing = await repeat(t, id, source, target, copyLimit);
        if (existing && !existing.removing) return { doc: existing, created: false };
        // Being removed: the follow comes after the unfollow, as a new edge.
        if (existing) await awaitRemoval(existing);
      }
      throw internal(new Error("the edge kept changing under the follow"));
    },

    /**
     * Removes the edge; what came from the target leaves the source feed unless `keepHistory`;
     * `follow.deleted` only when there was an edge. Only one of concurrent unfollows marks the
     * edge; the others answer false.
     */
    async unfollow(t: string, source: string, target: string, keepHistory: boolean): Promise<boolean> {
      const id = edgeKey(t, edgeOf(source, target));
      const cid = randomUUID();
      const messages = keepHistory ? [] : [tasks.message(cid, { t, s: source, g: target, k: "remove" })];
      const data: ChangeData = { kind: "unfollow", event: randomUUID() };
      const change = outbox.change(messages, { id: cid, targets: countTargets(t, source, target), data });
      const edge = await follows.markRemoval(id, cid, outbox.forUpdate(change));
      if (!edge) return false;
      // As the edge is now: marked, with this change (the answer was the edge before the mark).
      await removal({ ...edge, removing: cid, outbox: [...(edge.outbox ?? []), change] }, change);
      return true;
    },

    /** Batch import: quiet (no history task, no event); each new edge's counts move once. */
    async importMany(t: string, edges: { source: string; target: string }[]): Promise<EdgeOutcome[]> {
      const at = new Date();
      const docOf = new Map<string, number>();
      const docs: FollowDoc[] = [];
      const changes: PendingChange[] = [];
      const mentions = edges.map((e) => {
        const id = edgeKey(t, edgeOf(e.source, e.target));
        const seen = docOf.get(id);
        if (seen !== undefined) return { doc: seen, first: false };
        const change = outbox.change([], { at, targets: countTargets(t, e.source, e.target), data: { kind: "follow" } });
        docOf.set(id, docs.length);
        changes.push(change);
        docs.push({ _id: id, tenant_id: t, source_feed: e.source, target_feed: e.target, created_at: at, ...outbox.forInsert(change) });
        return { doc: docs.length - 1, first: true };
      });
      const inserted = await follows.insertMany(docs);
      const created = docs.flatMap((d, i) => (inserted[i] === "created" ? [{ d, change: changes[i] as PendingChange }] : []));
      await counts.apply(
        t,
        created.flatMap(({ d, change }) => moves(change.id, d.source_feed, d.target_feed, 1)),
      );
      if (created.length) await deps.followerSets.invalidate(t, [...new Set(created.flatMap(({ d }) => [d.source_feed, d.target_feed]))]);
      await Promise.all(created.map(({ d, change }) => outbox.settle(FOLLOWS, d._id, change)));
      // A repeat within the input is the edge its first mention made (or found).
      return mentions.map(({ doc, first }) => {
        const o = inserted[doc] ?? "failed";
        return first || o === "failed" ? o : "existed";
      });
    },

    /**
     * The outbox relay's finish of a change whose writer died (or could not publish): replays
     * its count moves (once-only) and invalidates the follower sets; a removal is finished whole
     * (the edge deleted). Then the relay publishes the change's messages and clears it.
     */
    async finish(doc: FollowDoc, change: PendingChange): Promise<void> {
      const data = dataOf(change);
      if (data?.kind === "follow") {
        // Cleared meanwhile (its writer was only slow): its moves are in.
        if (!(await follows.pending(doc._id, change.id))) return;
        await counts.apply(doc.tenant_id, moves(change.id, doc.source_feed, doc.target_feed, 1));
        await deps.followerSets.invalidate(doc.tenant_id, [doc.source_feed, doc.target_feed]);
      } else if (data?.kind === "unfollow") {
        const edge = await follows.find(doc._id);
        if (edge?.removing !== change.id) return;
        if (!(await removal(edge, change))) throw internal(new Error("unfollow messages not published"));
      }
    },
  };
}

export type FollowWrites = ReturnType<typeof createFollowWrites>;
