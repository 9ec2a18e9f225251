import { randomUUID } from "node:crypto";
import { conflict, eventMessages, liveActivityMessages, publishLive, isDuplicateKey, type CountSignal, type FeedEvent, type Finish, type Nats, type Outbox, type PendingChange } from "@feeds/kit";
import type { NewActivity } from "@feeds/proto/feeds/feed/v1/feed";
import { identityId, plain, type ActivityChangeKind, type ActivityDoc, type ActivityRepository } from "./activity-repository.js";
import type { EntryRepository } from "./entry-repository.js";
import type { Fanout } from "./fanout.js";
import type { Heads } from "./heads.js";
import type { Signals } from "./signals.js";
import type { ActivityCache } from "./activity-cache.js";
import { parseCustom } from "./validate.js";
import { liveActivityJson } from "./events.js";

// The writes of activities, each one single-document operation on the activity that carries what
// it owes (kit's outbox): an add inserts the activity with its fan-out task pending; a patch or a
// delete is a `findOneAndUpdate` conditioned on the version the writer read, with its event
// pending. After the write the writer settles the change (publishes it; the clear is background
// work), and whatever the writer does besides (origin entry, heads, signals, cache, entry removal)
// the relay's `finish` does again, idempotently, for a writer that died.

export const burned = () => conflict("this (foreign_id, time) identity belongs to a deleted activity");

export interface ActivityWritesDeps {
  activities: ActivityRepository;
  entries: EntryRepository;
  heads: Heads;
  signals: Signals;
  cache: ActivityCache;
  fanout: Pick<Fanout, "taskMessage" | "showIn" | "activityOf">;
  outbox: Outbox;
  nats: Nats;
  /** The console's change signal of activities (count, version). */
  consoleSignal: CountSignal;
  /** Of a tenant's feeds, those whose live events are buffered (kit's watchedFeeds); all when absent. */
  liveFeeds?: (tenantId: string, feeds: string[]) => Promise<string[]>;
}

const kindOf = (change: PendingChange) => change.data?.kind as ActivityChangeKind | undefined;

export function createActivityWrites(deps: ActivityWritesDeps) {
  const { activities, entries, heads, signals, cache, fanout, outbox, consoleSignal } = deps;
  const collection = activities.collection;

  /** The origin entry (idempotent); answers 1 when this call wrote it. */
  const originEntry = (doc: ActivityDoc): Promise<number> =>
    entries.upsertMany(doc.tenant_id, [{ feed: doc.origin_feed, activity_id: doc._id, time: doc.time, origin: doc.origin_feed }]);

  /** The origin feed's head and signal, and the activity cache (one Redis script for a live add). */
  async function showInOrigin(doc: ActivityDoc): Promise<void> {
    const { tenant_id: tenantId, _id: id, origin_feed: origin, time } = doc;
    await (doc.batch
      ? Promise.all([cache.putMany([doc]), fanout.showIn(tenantId, [origin], doc)])
      : heads.addAndBump(tenantId, origin, { id, timeMs: time.getTime() }, cache.entry(doc)));
  }

  /**
   * Publishes live messages; answers false when NATS would not take them (down): the write stays
   * acknowledged and its change pending, so the relay's finish publishes them once NATS is back
   * (message ids make a second publish one event).
   */
  async function publishLiveOr(messages: Parameters<typeof publishLive>[1]): Promise<boolean> {
    try {
      await publishLive(deps.nats, messages);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * A changed activity shows: the cache takes the new version, the feeds holding it move, and their
   * live streams get activity.updated (after the rest: a client refetching on the event sees it).
   * Answers false when the live events are left to the relay (the change must not be settled).
   */
  async function showChange(doc: ActivityDoc): Promise<boolean> {
    await cache.putMany([doc]);
    const feeds = await entries.feedsOf(doc.tenant_id, doc._id);
    await signals.bump(doc.tenant_id, feeds);
    const watched = deps.liveFeeds ? await deps.liveFeeds(doc.tenant_id, feeds) : feeds;
    return publishLiveOr(liveActivityMessages(deps.nats, doc.tenant_id, watched, "activity.updated", liveActivityJson(doc), `${doc._id}:${doc.version}`));
  }

  /**
   * A deleted activity leaves every feed: its tombstone is cached first (a fan-out chunk checks the
   * activity after writing its entries, so a chunk written after the removal began sees the
   * tombstone and removes what it wrote), then the entries, heads and signals.
   */
  async function removeEverywhere(tombstone: ActivityDoc): Promise<boolean> {
    const { tenant_id: tenantId, _id: id } = tombstone;
    await cache.putMany([tombstone]);
    const feeds = [...new Set([tombstone.origin_feed, ...(await entries.feedsOf(tenantId, id))])];
    await entries.removeActivity(tenantId, id);
    await heads.remove(tenantId, feeds, id);
    await signals.bump(tenantId, feeds);
    const watched = deps.liveFeeds ? await deps.liveFeeds(tenantId, feeds) : feeds;
    return publishLiveOr(liveActivityMessages(deps.nats, tenantId, watched, "activity.deleted", liveActivityJson(tombstone, true), id));
  }

  /**
   * Stores one activity: inserted with its fan-out task pending (one command, batched with
   * concurrent adds), then its origin entry (one more), head, signal and cache, then the task
   * published. An activity with a (foreign_id, time) identity has the id derived from it, so a
   * second write of the identity is a duplicate key and answers the stored activity: 409 when it
   * is a tombstone (the identity stays burned).
   */
  async function add(tenantId: string, origin: string, a: NewActivity, time: Date, batch: boolean): Promise<{ doc: ActivityDoc; created: boolean }> {
    const doc: ActivityDoc = {
      _id: a.foreignId ? identityId(tenantId, a.foreignId, time) : randomUUID(),
      tenant_id: tenantId,
      actor: a.actor,
      verb: a.verb,
      object: a.object,
      target: a.target ?? null,
      foreign_id: a.foreignId ?? null,
      time,
      custom_json: JSON.stringify(parseCustom(a.customJson)),
      origin_feed: origin,
      refs: a.refs,
      reaction_counts: {},
      version: 1,
      edited_at: null,
      deleted_at: null,
      created_at: new Date(),
      batch,
    };
    // A live add also owes the origin feed's activity.added (docs/stream.md); batch imports are quiet.
    const live = batch ? [] : liveActivityMessages(deps.nats, tenantId, [origin], "activity.added", liveActivityJson(doc), doc._id);
    const change = outbox.change([fanout.taskMessage(doc), ...live], { data: { kind: "add" } });
    try {
      await activities.insert({ ...doc, ...outbox.forInsert(change) });
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return duplicate(tenantId, doc._id, e);
    }
    // Read your own writes: the origin feed and its signal show it before we answer. The task goes
    // out beside the head (the worker needs the origin entry only, and reads the activity from the
    // cache, MongoDB when the cache has no answer). The console's count moves beside the entry.
    await Promise.all([originEntry(doc), consoleSignal.bump(tenantId, 1)]);
    // The head first: a live client refetching on the origin's activity.added finds the entry.
    await showInOrigin(doc);
    await outbox.settle(collection, doc._id, change);
    return { doc, created: true };
  }

  /**
   * A second write of a stored identity answers the stored activity. While its add is pending (its
   * writer still running, or dead before its origin entry), this write writes the origin entry,
   * head, signal and cache too (idempotent), so that its own answer is readable in the origin
   * feed; the task stays the first writer's (or the relay's) to publish: a live duplicate starts
   * no fan-out.
   */
  async function duplicate(tenantId: string, id: string, e: unknown): Promise<{ doc: ActivityDoc; created: boolean }> {
    const existing = await activities.getWithOutbox(tenantId, id);
    if (!existing) throw e;
    if (existing.deleted_at) throw burned();
    const stored = plain(existing);
    if (existing.outbox?.some((c) => kindOf(c) === "add")) {
      await originEntry(stored);
      await showInOrigin(stored);
    }
    return { doc: stored, created: false };
  }

  /**
   * `set` on the live activity `doc` at the version read, with `event` pending in the same update.
   * Answers the new document and the settle to run after the other effects, or null when another
   * write changed the activity first (the caller reads it again and retries).
   */
  async function changeIfVersion(
    doc: ActivityDoc,
    set: Partial<ActivityDoc>,
    event: FeedEvent,
    kind: Exclude<ActivityChangeKind, "add">,
  ): Promise<{ doc: ActivityDoc; settle: () => Promise<unknown> } | null> {
    const change = outbox.change(eventMessages(deps.nats, [event]), { data: { kind } });
    const updated = await activities.updateIfVersion(doc, doc.version, set, outbox.forUpdate(change));
    return updated && { doc: updated, settle: () => outbox.settle(collection, doc._id, change) };
  }

  /**
   * The relay's finish of a change whose writer did not settle it (died, or lost NATS): what the
   * writer does after its write, again; the relay then publishes the change's messages.
   */
  const finish: Finish = async (stored, change) => {
    const doc = plain(stored as unknown as ActivityDoc);
    const kind = kindOf(change);
    // The live events first: a relay that could not publish them keeps the change (NATS down).
    const liveOut = (published: boolean) => {
      if (!published) throw new Error("live events not published (NATS unavailable): the change stays pending");
    };
    if (kind === "update") return liveOut(await showChange(doc));
    if (kind === "delete") return liveOut(await removeEverywhere(doc));
    if (kind !== "add" || doc.deleted_at) return;
    // The console's count moves with the entry (a writer that died before both never moved it).
    if (await originEntry(doc)) await consoleSignal.bump(doc.tenant_id, 1);
    await showInOrigin(doc);
    // A delete that ran meanwhile removed the entries before this one was written: as a fan-out
    // chunk does, look again after writing (the cache first, where a delete puts its tombstone).
    const after = await fanout.activityOf(doc.tenant_id, doc._id);
    if (after?.deleted_at) liveOut(await removeEverywhere(after));
  };

  return { add, changeIfVersion, showChange, removeEverywhere, finish };
}

export type ActivityWrites = ReturnType<typeof createActivityWrites>;
