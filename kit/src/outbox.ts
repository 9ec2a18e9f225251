import { randomUUID } from "node:crypto";
import type { Collection, Db, Document, Filter, UpdateFilter } from "mongodb";
import { eventSubject, type FeedEvent } from "./events.js";
import type { Logger } from "./log.js";
import { workScope } from "./metrics.js";
import type { Nats } from "./nats.js";

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
// change that could replay it).

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
}

/** The fields a document holds while changes of it are pending. */
export interface OutboxFields {
  outbox?: PendingChange[];
  outbox_pending?: true;
}

/** How the relay finishes a pending change whose writer did not: its replayable side effects. */
/** Documents of any registered collection (string ids). */
type AnyDoc = { _id: string; outbox?: PendingChange[]; outbox_pending?: true; applied?: string[] };

export type Finish = (doc: Document & { _id: string } & OutboxFields, change: PendingChange) => Promise<"delete" | void>;

/** How long a change is its writer's before the relay may finish it. */
export const OUTBOX_GRACE_MS = 2000;
/** Clears waiting at most this long, and this many to one command. */
const CLEAR_DELAY_MS = 20;
const CLEAR_MAX = 500;

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
  let clearing: Promise<void> = Promise.resolve();

  async function clearNow(items: { collection: string; docId: string; change: PendingChange }[]): Promise<void> {
    const byCollection = new Map<string, typeof items>();
    for (const it of items) byCollection.set(it.collection, [...(byCollection.get(it.collection) ?? []), it]);
    // The changes first: a target's applied id must outlive the change that could replay it.
    await Promise.all(
      [...byCollection].map(async ([name, its]) => {
        // Mostly the change is its document's only one: one write takes it and the flag away.
        const only = await col(name).bulkWrite(
          its.map((it) => ({
            updateOne: { filter: { _id: it.docId, outbox: { $size: 1 }, "outbox.0.id": it.change.id }, update: { $unset: { outbox: "", outbox_pending: "" } } },
          })),
          { ordered: false },
        );
        if (only.matchedCount === its.length) return;
        // Some document holds other changes too (or this one is gone already): the change is
        // pulled, and the flag goes with the last change (a change arriving meanwhile keeps both).
        await col(name).bulkWrite(
          its.flatMap((it) => [
            { updateOne: { filter: { _id: it.docId }, update: { $pull: { outbox: it.change } } } },
            { updateOne: { filter: { _id: it.docId, outbox: { $size: 0 } }, update: { $unset: { outbox: "", outbox_pending: "" } } } },
          ]),
          { ordered: true },
        );
      }),
    );
    const targets = new Map<string, Map<string, string[]>>();
    for (const it of items) {
      for (const t of it.change.targets) {
        const m = targets.get(t.collection) ?? new Map<string, string[]>();
        m.set(t.id, [...(m.get(t.id) ?? []), it.change.id]);
        targets.set(t.collection, m);
      }
    }
    await Promise.all(
      [...targets].map(([name, m]) =>
        col(name).bulkWrite(
          [...m].map(([id, ids]) => ({ updateOne: { filter: { _id: id }, update: { $pullAll: { [APPLIED_FIELD]: ids } } } })),
          { ordered: false },
        ),
      ),
    );
  }

  function flushClears(): void {
    clearTimer = undefined;
    const items = queued.splice(0, CLEAR_MAX);
    if (queued.length) clearTimer = setTimeout(flushClears, 0);
    clearing = clearing
      .then(() => clearNow(items))
      .catch((err: unknown) => o.log.debug({ err: String(err), changes: items.length }, "outbox clears left to the relay"));
  }

  function clearLater(collection: string, docId: string, change: PendingChange): void {
    queued.push({ collection, docId, change });
    // Background work: its commands are not those of the request that queued it (metrics' workScope).
    workScope.exit(() => {
      if (queued.length >= CLEAR_MAX) {
        clearTimeout(clearTimer);
        flushClears();
      } else clearTimer ??= setTimeout(flushClears, CLEAR_DELAY_MS);
    });
  }

  async function publish(messages: readonly OutboxMessage[]): Promise<void> {
    for (const m of messages) await o.nats.js.publish(m.subject, new TextEncoder().encode(m.data), { msgID: m.msgId });
  }

  /** Finishes the stale changes of one collection; answers how many it finished. */
  async function relayCollection(name: string, finish: Finish | undefined, limit: number): Promise<number> {
    const cutoff = Date.now() - graceMs;
    const docs = await col(name).find({ outbox_pending: true }).limit(limit).toArray();
    let finished = 0;
    for (const doc of docs) {
      const changes = doc.outbox ?? [];
      if (changes.length === 0) {
        // Every change was cleared: the flag goes, unless a change arrived since.
        await col(name).updateOne({ _id: doc._id, outbox: { $size: 0 } }, { $unset: { outbox: "", outbox_pending: "" } });
        continue;
      }
      for (const change of changes) {
        if (change.at.getTime() > cutoff) continue;
        const outcome = finish ? await finish(doc, change) : undefined;
        await publish(change.messages);
        if (outcome === "delete") await col(name).deleteOne({ _id: doc._id });
        else await clearNow([{ collection: name, docId: doc._id, change }]);
        finished++;
        if (outcome === "delete") break;
      }
    }
    return finished;
  }

  async function relayOnce(limit = 100): Promise<number> {
    let n = 0;
    for (const [name, finish] of finishers) n += await relayCollection(name, finish, limit);
    return n;
  }

  async function flush(): Promise<void> {
    if (clearTimer) {
      clearTimeout(clearTimer);
      flushClears();
    }
    await clearing;
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
      return {
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
     * `clear: false` when the document is going away anyway (the writer deletes it next).
     */
    async settle(collection: string, docId: string, change: PendingChange, opts: { clear?: boolean } = {}): Promise<void> {
      try {
        await publish(change.messages);
      } catch (err) {
        o.log.warn({ err: String(err), change: change.id, collection }, "messages left to the outbox relay");
        return;
      }
      if (opts.clear !== false) clearLater(collection, docId, change);
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
