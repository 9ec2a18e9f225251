import { randomUUID } from "node:crypto";
import type { Collection, Db, Document, Filter, UpdateFilter } from "mongodb";
import { eventSubject, type FeedEvent } from "./events.js";
import type { Logger } from "./log.js";
import { workScope } from "./metrics.js";
import { publishOptions, type Nats } from "./nats.js";
import { traceHeaders } from "./tracing.js";

// One outbox for every service. A write that owes messages to JetStream (events, fan-out tasks)
// records them as a pending change in the very document it writes, in the same single-document
// operation: an insert carries `outbox: [change]`, an update `$push`es it. The change is there if
// and only if the write happened, so nothing has to be confirmed later. After the write:
//
//   1. `settle` publishes the change's messages (each with its JetStream message id, so a repeat
//      inside the duplicate window is dropped) and, after the answer, clears the change in the
//      background, batched with other writes' clears (not on the request path).
//   2. A writer that died (or lost NATS) leaves the change in its document; the relay finds it
//      (`outbox_pending: true`, an indexed equality) once it is older than the grace, runs the
//      collection's `finish` (e.g. the change's replayable increments), publishes its messages
//      and clears it. Everything it does is idempotent: the writer may have done any part of it.
//
// Increments on another document that a change must make exactly once are made replayable with
// `onceFilter`/`onceUpdate`: the target remembers the change id (`applied`) in the same atomic
// update, so a replay of an applied change matches nothing. The clear removes the id again once the
// change itself is cleared (first the change, then the targets: a target's id must outlive the
// change that could replay it). A relay claims a document for a while before it finishes its
// changes (`outbox_claim`, a conditional update that answers the document as it is then), so two
// relays never both hold a copy of one change: a second relay would replay a copy whose target id
// the first had cleared already. A writer must apply its own increments well within the grace.

/** One message to publish: JSON `data` on `subject` with JetStream message id `msgId`. */
export interface OutboxMessage {
  subject: string;
  msgId: string;
  data: string;
}

/** The messages that publish `events` to the notify queue (message id `ev:<event id>`, as `publishEvents`). */
export function eventMessages(nats: Nats, events: readonly FeedEvent[]): OutboxMessage[] {
  const subject = eventSubject(nats);
  return events.map((e) => ({ subject, msgId: `ev:${e.id}`, data: JSON.stringify(e) }));
}

/** A document elsewhere whose `applied` list holds this change's id (see `onceUpdate`). */
export interface OutboxTarget {
  collection: string;
  id: string;
}

/** A pending change, kept in the written document's `outbox` array until it is cleared. */
export interface PendingChange {
  id: string;
  at: Date;
  messages: OutboxMessage[];
  targets: OutboxTarget[];
  /** Free-form facts the collection's `finish` needs to replay the change (e.g. `{kind: "like", delta: 1}`). */
  data?: Record<string, unknown>;
  /** The writer's trace context (`traceparent`), published with the messages; only while tracing is on. */
  trace?: Record<string, string>;
}

/** The fields a document holds while changes of it are pending. */
export interface OutboxFields {
  outbox?: PendingChange[];
  outbox_pending?: true;
}

/** Documents of any registered collection (string ids). */
type AnyDoc = { _id: string; outbox?: PendingChange[]; outbox_pending?: true; outbox_claim?: Date; applied?: string[] };

/**
 * How the relay finishes a pending change whose writer did not: its replayable side effects. The
 * outcome: nothing (publish the messages, clear the change), "delete" (publish them, then delete
 * the document, e.g. a removal whose writer died) or "drop" (the change did not happen, e.g. its
 * target refused it: delete the document, publish nothing).
 */
export type Finish = (doc: Document & { _id: string } & OutboxFields, change: PendingChange) => Promise<"delete" | "drop" | void>;

/** The applied ids to pull from one target document (see `OutboxOptions.clearTargets`). */
export interface AppliedIds {
  id: string;
  changes: string[];
}

/** How long a change is its writer's before the relay may finish it. */
export const OUTBOX_GRACE_MS = 2000;
/** Clears waiting at most this long, and this many to one command. */
const CLEAR_DELAY_MS = 20;
const CLEAR_MAX = 500;
/** Documents one relay pass finishes side by side. */
const RELAY_LANES = 8;
/** How long a relay's claim on a document lasts; it replays a change only in the first half. */
const CLAIM_MS = 30_000;

/** The `applied` list of a target: change ids whose increments it holds. */
export const APPLIED_FIELD = "applied";

/** A filter that matches `filter` only while change `changeId` is not applied to the document. */
export function onceFilter<T extends Document>(filter: Filter<T>, changeId: string): Filter<T> {
  return { ...filter, [APPLIED_FIELD]: { $ne: changeId } };
}

/** `update` plus the record of `changeId` in the target's `applied` list (same atomic operation). */
export function onceUpdate<T extends Document>(update: UpdateFilter<T>, changeId: string): UpdateFilter<T> {
  const push = { ...((update.$push as Record<string, unknown> | undefined) ?? {}), [APPLIED_FIELD]: changeId };
  return { ...update, $push: push } as unknown as UpdateFilter<T>;
}

export interface OutboxOptions {
  db: Db;
  nats: Nats;
  log: Logger;
  /** How long a change is its writer's (default OUTBOX_GRACE_MS; tests shorten it). */
  graceMs?: number;
  /**
   * Target collections whose applied ids are pulled by a callback instead of a direct update
   * (documents another service owns, e.g. through its RPC). Keyed by `OutboxTarget.collection`;
   * the target ids are then the callback's to read.
   */
  clearTargets?: Record<string, (applied: AppliedIds[]) => Promise<void>>;
}

export function createOutbox(o: OutboxOptions) {
  const graceMs = o.graceMs ?? OUTBOX_GRACE_MS;
  const finishers = new Map<string, Finish | undefined>();
  const col = (name: string): Collection<AnyDoc> => o.db.collection<AnyDoc>(name);
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;

  // Background clears, batched per collection: one `update` command of many statements.
  const queued: { collection: string; docId: string; change: PendingChange }[] = [];
  let clearTimer: NodeJS.Timeout | undefined;
  /** The running drain of `queued`, if any: one at a time, each batch what was queued when it began. */
  let draining: Promise<void> | null = null;
  /**
   * The settled changes whose clear is queued or running here (`collection\ndoc\nchange`): this
   * process's relay leaves them alone (they are published; only their clear is to come), so a
   * clear that falls behind the grace under load costs no claim and no second finish.
   */
  const clearing = new Set<string>();
  const clearingKey = (collection: string, docId: string, changeId: string) => `${collection}\n${docId}\n${changeId}`;

  /**
   * Clears changes from their documents, then their ids from their targets. A writer's change
   * (not `byRelay`) that left its document only after the grace may have been read by a relay
   * meanwhile, which may still replay it: its target ids stay (the relay's own clear is the
   * claim holder's, so safe).
   */
  async function clearNow(items: { collection: string; docId: string; change: PendingChange }[], byRelay = false): Promise<void> {
    const byCollection = new Map<string, typeof items>();
    for (const it of items) byCollection.set(it.collection, [...(byCollection.get(it.collection) ?? []), it]);
    // The changes first: a target's applied id must outlive the change that could replay it.
    await Promise.all(
      [...byCollection].map(async ([name, its]) => {
        // The document's only change: it goes with the flag in one write (the common case: one
        // statement per change).
        const only = await col(name).bulkWrite(
          its.map((it) => ({
            updateOne: { filter: { _id: it.docId, outbox: [it.change] }, update: { $unset: { outbox: "", outbox_pending: "", outbox_claim: "" } } },
          })),
          { ordered: false },
        );
        if (only.matchedCount === its.length) return;
        // Some change was one of several in its document (or gone already): pulled where it still
        // is (changes nothing where the statement before took it), then the flag goes from a
        // document these pulls left without a change (unless one arrived meanwhile).
        await col(name).bulkWrite(
          its.map((it) => ({ updateOne: { filter: { _id: it.docId }, update: { $pull: { outbox: it.change } } } })),
          { ordered: false },
        );
        const docs = [...new Set(its.map((it) => it.docId))];
        await col(name).bulkWrite(
          docs.map((id) => ({ updateOne: { filter: { _id: id, outbox: { $size: 0 } }, update: { $unset: { outbox: "", outbox_pending: "", outbox_claim: "" } } } })),
          { ordered: false },
        );
      }),
    );
    const doneAt = Date.now();
    await clearTargets(items.filter((it) => byRelay || doneAt < it.change.at.getTime() + graceMs).map((it) => it.change));
  }

  /** Pulls the changes' ids from their targets (after the changes are gone from their documents). */
  async function clearTargets(changes: PendingChange[]): Promise<void> {
    const targets = new Map<string, Map<string, string[]>>();
    for (const change of changes) {
      for (const t of change.targets) {
        const m = targets.get(t.collection) ?? new Map<string, string[]>();
        m.set(t.id, [...(m.get(t.id) ?? []), change.id]);
        targets.set(t.collection, m);
      }
    }
    await Promise.all(
      [...targets].map(([name, m]) => {
        const custom = o.clearTargets?.[name];
        if (custom) return custom([...m].map(([id, ids]) => ({ id, changes: ids })));
        return col(name).bulkWrite(
          [...m].map(([id, ids]) => ({ updateOne: { filter: { _id: id }, update: { $pullAll: { [APPLIED_FIELD]: ids } } } })),
          { ordered: false },
        );
      }),
    );
  }

  /**
   * Starts draining the queued clears unless a drain runs (it takes what is queued when its batch
   * ends). A batch is everything queued then, up to CLEAR_MAX: under load the batches grow
   * instead of the clears falling behind (a clear later than the grace makes the relay claim and
   * finish the change again).
   */
  function flushClears(): void {
    clearTimer = undefined;
    if (draining) return;
    draining = (async () => {
      while (queued.length) {
        const items = queued.splice(0, CLEAR_MAX);
        await clearNow(items).catch((err: unknown) => o.log.debug({ err: String(err), changes: items.length }, "outbox clears left to the relay"));
        for (const it of items) clearing.delete(clearingKey(it.collection, it.docId, it.change.id));
      }
    })().finally(() => {
      draining = null;
      if (queued.length) clearTimer ??= setTimeout(flushClears, 0);
    });
  }

  function clearLater(collection: string, docId: string, change: PendingChange): void {
    queued.push({ collection, docId, change });
    clearing.add(clearingKey(collection, docId, change.id));
    // Background work, not the request's that queued it (its commands are counted apart).
    workScope.exit(() => {
      if (queued.length >= CLEAR_MAX) {
        clearTimeout(clearTimer);
        flushClears();
      } else clearTimer ??= setTimeout(flushClears, CLEAR_DELAY_MS);
    });
  }

  async function publish(change: PendingChange): Promise<void> {
    for (const m of change.messages) await o.nats.js.publish(m.subject, new TextEncoder().encode(m.data), publishOptions(m.msgId, change.trace));
  }

  /** Finishes the stale changes of one collection; answers how many it finished. */
  async function relayCollection(name: string, finish: Finish | undefined, limit: number): Promise<number> {
    const cutoff = Date.now() - graceMs;
    const found = await col(name).find({ outbox_pending: true }).limit(limit).toArray();
    let finished = 0;
    // Documents side by side (each claimed on its own): after a crash a backlog of hundreds of
    // changes takes seconds, not one document's round trips after another.
    let next = 0;
    const lanes = Array.from({ length: Math.min(RELAY_LANES, found.length) }, async () => {
      while (next < found.length) {
        const seen = found[next++] as AnyDoc;
        const n = await finishDocument(name, finish, seen, cutoff);
        finished += n;
      }
    });
    await Promise.all(lanes);
    return finished;
  }

  /** Finishes the stale changes of one document the relay found; answers how many it finished. */
  async function finishDocument(name: string, finish: Finish | undefined, seen: AnyDoc, cutoff: number): Promise<number> {
    let finished = 0;
    if ((seen.outbox ?? []).length === 0) {
      // Every change was cleared: the flag goes, unless a change arrived since.
      await col(name).updateOne({ _id: seen._id, outbox: { $size: 0 } }, { $unset: { outbox: "", outbox_pending: "", outbox_claim: "" } });
      return 0;
    }
    const stale = (c: PendingChange) => c.at.getTime() <= cutoff && !clearing.has(clearingKey(name, seen._id, c.id));
    if (!(seen.outbox ?? []).some(stale)) return 0;
    // Claimed by this relay alone (another's claim still running: its to finish), read afresh.
    const now = Date.now();
    const doc = await col(name).findOneAndUpdate(
      { _id: seen._id, outbox_pending: true, $or: [{ outbox_claim: { $exists: false } }, { outbox_claim: { $lt: new Date(now) } }] },
      { $set: { outbox_claim: new Date(now + CLAIM_MS) } },
      { returnDocument: "after" },
    );
    if (!doc) return 0;
    const claim = doc.outbox_claim;
    let deleted = false;
    try {
      for (const change of doc.outbox ?? []) {
        if (change.at.getTime() > cutoff || clearing.has(clearingKey(name, doc._id, change.id))) continue;
        if (Date.now() > now + CLAIM_MS / 2) break;
        const outcome = finish ? await finish(doc, change) : undefined;
        deleted = outcome === "delete" || outcome === "drop";
        if (outcome !== "drop") await publish(change);
        if (deleted) {
          await col(name).deleteOne({ _id: doc._id });
          await clearTargets([change]);
        } else await clearNow([{ collection: name, docId: doc._id, change }], true);
        finished++;
        if (deleted) break;
      }
    } finally {
      // The claim goes with the pass, failed or not (a last change cleared took it already).
      if (!deleted) await col(name).updateOne({ _id: doc._id, outbox_claim: claim }, { $unset: { outbox_claim: "" } });
    }
    return finished;
  }

  async function relayOnce(limit = 100): Promise<number> {
    let n = 0;
    for (const [name, finish] of finishers) n += await relayCollection(name, finish, limit);
    return n;
  }

  async function flush(): Promise<void> {
    clearTimeout(clearTimer);
    flushClears();
    while (draining) await draining;
  }

  return {
    /** Registers a collection whose documents carry pending changes, and how to finish them. */
    register(collection: string, finish?: Finish): void {
      finishers.set(collection, finish);
    },

    /** The index the relay's lookup uses, on every registered collection. */
    async ensureIndexes(): Promise<void> {
      await Promise.all([...finishers.keys()].map((name) => col(name).createIndex({ outbox_pending: 1 })));
    },

    /** A new pending change (`id` defaults to a fresh uuid). */
    change(messages: OutboxMessage[], opts: { id?: string; targets?: OutboxTarget[]; data?: Record<string, unknown>; at?: Date } = {}): PendingChange {
      const trace = messages.length ? traceHeaders() : undefined;
      return {
        ...(trace ? { trace } : {}),
        id: opts.id ?? randomUUID(),
        at: opts.at ?? new Date(),
        messages,
        targets: opts.targets ?? [],
        ...(opts.data ? { data: opts.data } : {}),
      };
    },

    /** The fields of a document inserted with `change` pending. */
    forInsert(change: PendingChange): Required<OutboxFields> {
      return { outbox: [change], outbox_pending: true };
    },

    /** The operators that record `change` in an update (merge them into the update's own). */
    forUpdate(change: PendingChange): { $push: { outbox: PendingChange }; $set: { outbox_pending: true } } {
      return { $push: { outbox: change }, $set: { outbox_pending: true } };
    },

    /**
     * After the write: publishes the change's messages, then clears it in the background. A failed
     * publish is logged and left to the relay (the write happened; its answer stands). Pass
     * `clear: false` when the document is going away anyway (the writer deletes it next, once
     * the messages are out, then `discard`s the change to clear its targets). Answers whether the
     * messages were published.
     */
    async settle(collection: string, docId: string, change: PendingChange, opts: { clear?: boolean } = {}): Promise<boolean> {
      try {
        await publish(change);
      } catch (err) {
        o.log.warn({ err: String(err), change: change.id, collection }, "messages left to the outbox relay");
        return false;
      }
      if (opts.clear !== false) clearLater(collection, docId, change);
      return true;
    },

    /** Clears a change now (in the background batch), without publishing anything. */
    discard(collection: string, docId: string, change: PendingChange): void {
      clearLater(collection, docId, change);
    },

    /** One relay pass over every registered collection; answers the changes finished. */
    relayOnce,

    /** Waits for the clears queued so far (tests, shutdown). */
    flush,

    startRelay(intervalMs = 1000): void {
      stopped = false;
      const tick = async () => {
        try {
          await relayOnce();
        } catch (err) {
          o.log.debug({ err: String(err) }, "outbox relay pass failed");
        }
        if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
      };
      timer = setTimeout(() => void tick(), intervalMs);
    },

    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await flush();
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;
