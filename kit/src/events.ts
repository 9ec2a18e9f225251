import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { Logger } from "./log.js";
import type { Nats } from "./nats.js";
import { webhookEventTypes } from "@feeds/sdk";

// The system's events (contract section 3). Producers record them with their write through an
// outbox and publish them to the `notify` work queue; the notification service's worker turns
// them into notifications and webhook deliveries.

/** Every event type of contract section 3: the SDK's list, which the webhook routes validate with. */
export const EVENT_TYPES = webhookEventTypes;
export type EventType = (typeof EVENT_TYPES)[number];
export const isEventType = (s: string): s is EventType => (EVENT_TYPES as readonly string[]).includes(s);

export interface FeedEvent {
  /** uuid: the webhook-id of every delivery of this event, and its JetStream message id. */
  id: string;
  type: EventType;
  tenant_id: string;
  /** ISO 8601: the time of the act (notifications take it as their created_at). */
  created_at: string;
  /** The public payload: the `data` of the webhook body (the Activity for activity.*). */
  data: Record<string, unknown>;
  /** Facts for routing that are not part of the public payload (e.g. whom to notify). */
  meta?: Record<string, string>;
}

export function newEvent(
  type: EventType,
  tenantId: string,
  data: Record<string, unknown>,
  opts: { at?: Date; meta?: Record<string, string>; id?: string } = {},
): FeedEvent {
  return {
    id: opts.id ?? randomUUID(),
    type,
    tenant_id: tenantId,
    created_at: (opts.at ?? new Date()).toISOString(),
    data,
    ...(opts.meta ? { meta: opts.meta } : {}),
  };
}

/** The subject every event travels on: the `notify` work queue. */
export const eventSubject = (nats: Nats) => nats.subject("notify", "event");

/** Publishes events; JetStream drops a repeat of an id within its duplicate window. */
export async function publishEvents(nats: Nats, events: readonly FeedEvent[]): Promise<void> {
  const subject = eventSubject(nats);
  for (const e of events) {
    await nats.js.publish(subject, new TextEncoder().encode(JSON.stringify(e)), { msgID: `ev:${e.id}` });
  }
}

export const decodeEvent = (data: Uint8Array): FeedEvent => JSON.parse(new TextDecoder().decode(data)) as FeedEvent;

interface OutboxDoc {
  _id: string;
  tenant_id: string;
  events: FeedEvent[];
  /** false until the write it belongs to is known to have happened. */
  written: boolean;
  at: Date;
}

/** Records older than this are the relay's: their writer died or lost NATS. */
const STALE_MS = 2000;

export interface EventOutboxOptions {
  db: Db;
  nats: Nats;
  log: Logger;
  /** One collection per service, e.g. "engagement_outbox". */
  collection: string;
  /**
   * Whether the write an event belongs to took effect (asked by the relay of a record whose
   * writer died between recording and writing): e.g. the reaction exists, the edge is gone.
   */
  confirm(event: FeedEvent, recordId: string): Promise<boolean>;
}

/**
 * The outbox of one service. `emit` records the events, runs the write, publishes the events
 * and drops the record. Whatever fails after the record was written, the relay finishes it:
 * events of a confirmed write are published, events of a write that never happened are dropped.
 */
export function createEventOutbox(o: EventOutboxOptions) {
  const outbox: Collection<OutboxDoc> = o.db.collection<OutboxDoc>(o.collection);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function publishAndDrop(doc: Pick<OutboxDoc, "_id" | "events">) {
    await publishEvents(o.nats, doc.events);
    await outbox.deleteOne({ _id: doc._id });
  }

  async function relayOnce(limit = 100): Promise<number> {
    const stale = await outbox.find({ at: { $lt: new Date(Date.now() - STALE_MS) } }).limit(limit).toArray();
    for (const doc of stale) {
      const events = doc.written ? doc.events : await filterAsync(doc.events, (e) => o.confirm(e, doc._id));
      await publishAndDrop({ _id: doc._id, events });
    }
    return stale.length;
  }

  return {
    async ensureIndexes() {
      await outbox.createIndex({ at: 1 });
    },

    /**
     * Runs `write` with `events` recorded beside it. An empty list runs the write alone (quiet
     * operations). A failed write drops its record and rethrows; so does a write whose result
     * `publishIf` declines (e.g. the reaction existed already: nothing happened). A failed
     * publish leaves the record to the relay and still answers the write's result.
     */
    async emit<T>(tenantId: string, events: FeedEvent[], write: (recordId: string | null) => Promise<T>, opts: { publishIf?: (result: T) => boolean } = {}): Promise<T> {
      if (events.length === 0) return write(null);
      const _id = randomUUID();
      await outbox.insertOne({ _id, tenant_id: tenantId, events, written: false, at: new Date() });
      let result: T;
      try {
        result = await write(_id);
      } catch (e) {
        await outbox.deleteOne({ _id }).catch(() => undefined);
        throw e;
      }
      if (opts.publishIf && !opts.publishIf(result)) {
        // The relay would drop it too (its confirm fails), but sooner is cheaper.
        await outbox.deleteOne({ _id }).catch(() => undefined);
        return result;
      }
      try {
        await publishAndDrop({ _id, events });
      } catch (err) {
        o.log.warn({ err: String(err), outbox: _id }, "events left to the outbox relay");
        await outbox.updateOne({ _id }, { $set: { written: true } }).catch(() => undefined);
      }
      return result;
    },

    relayOnce,

    startRelay(intervalMs = 1000) {
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

    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export type EventOutbox = ReturnType<typeof createEventOutbox>;

async function filterAsync<T>(items: T[], keep: (item: T) => Promise<boolean>): Promise<T[]> {
  const flags = await Promise.all(items.map(keep));
  return items.filter((_, i) => flags[i]);
}
