import { createHash } from "node:crypto";
import type { JsMsg } from "nats";
import { createQueueWorker, publishEvents, scope, uuidFrom, type Clients, type Logger, type Nats, type WorkerBeats } from "@feeds/kit";
import type { ActivityDoc, ActivityRepository } from "./activity-repository.js";
import type { EntryRepository } from "./entry-repository.js";
import type { Signals } from "./signals.js";
import type { Heads } from "./heads.js";
import type { ActivityCache } from "./activity-cache.js";
import type { ActivityEvents } from "./events.js";
import type { FanoutLag } from "./fanout-lag.js";

// Fan-out on write, in chunks: an activity task streams the origin feed's followers in one pass
// and publishes one chunk task per batch of followers; chunk tasks write the feed entries. Several
// worker replicas share the chunk tasks of one large fan-out through the work-queue stream.

export const CHUNK_SIZE = 500;
/** How long the follower pass of one activity may take (split mode: one gRPC stream). */
const FOLLOWER_STREAM_TIMEOUT_MS = 10 * 60_000;
/** Deliveries before a task goes to the dead-letter stream, and the waits between them. */
export const MAX_DELIVER = 5;
const BACKOFF_MS = [250, 500, 1000, 2000];
const IN_FLIGHT = 8;
/**
 * A worker that died is found this soon: its tasks go to another worker (or to itself once it is
 * back). Running tasks send heartbeats meanwhile, so a long one is not redelivered.
 */
export const ACK_WAIT_MS = 5000;

interface ActivityTask {
  kind: "activity";
  t: string;
  a: string;
  /** 1 when the publisher had written the origin entry already (the write path); the relay does not know. */
  o?: 1;
}
interface ChunkTask {
  kind: "chunk";
  t: string;
  a: string;
  feeds: string[];
}
type Task = ActivityTask | ChunkTask;
/** A write's promise of a fan-out task, published before the activity is stored. */
interface Intent {
  t: string;
  a: string;
}

/** How long an intent waits before the relay looks: its write publishes the task well before. */
export const INTENT_GRACE_MS = 10_000;
/** Looks again this often while the intent's activity is not in MongoDB (its write may be slow)... */
const INTENT_RETRY_MS = 30_000;
/** ...until this age: an activity still absent then belonged to a write that failed (its client
 * had an error, not an answer). */
const INTENT_GIVE_UP_MS = 5 * 60_000;

const digest = (feeds: string[]) => createHash("sha256").update(feeds.join("\n")).digest("base64url").slice(0, 22);

export interface FanoutDeps {
  nats: Nats;
  activities: ActivityRepository;
  entries: EntryRepository;
  signals: Signals;
  heads: Heads;
  /** The write path's activity cache: the activity task reads its activity there first. */
  cache: ActivityCache;
  peers: () => Pick<Clients, "graph">;
  /** activity.added: published by the activity task, so it follows the activity's outbox mark. */
  events: ActivityEvents;
  log: Logger;
  /** Readiness names the fan-out worker when its loop stops beating. */
  beats?: WorkerBeats;
  /** Live writes' fan-out lag (batch imports are not timed). */
  lag?: FanoutLag;
  /** How long an intent waits before its relay looks (default INTENT_GRACE_MS; tests shorten it). */
  intentGraceMs?: number;
}

export function createFanout(deps: FanoutDeps) {
  const { nats, activities, entries, signals, heads, log } = deps;
  const subject = nats.subject("fanout", "task");
  const intentSubject = nats.subject("fanout_intents", "intent");
  const intentStream = nats.stream("fanout_intents");
  const intentGraceMs = deps.intentGraceMs ?? INTENT_GRACE_MS;
  const encode = (t: Task | Intent) => new TextEncoder().encode(JSON.stringify(t));
  let relayTimer: NodeJS.Timeout | undefined;
  let stopped = false;

  /**
   * Tells JetStream, before the activity is stored, that its fan-out will be owed: if the write
   * stores it and dies before publishing the task, the intent relay publishes it. Answers the
   * intent's stream sequence (for `forget`), or null when NATS does not take it (the write then
   * stores the activity with an outbox mark instead).
   */
  async function intend(doc: Pick<ActivityDoc, "_id" | "tenant_id">): Promise<number | null> {
    const intent: Intent = { t: doc.tenant_id, a: doc._id };
    try {
      return (await nats.js.publish(intentSubject, encode(intent), { msgID: `i:${doc._id}` })).seq;
    } catch (err) {
      log.warn({ err: String(err), activity: doc._id }, "fan-out intent not taken; the activity carries an outbox mark");
      return null;
    }
  }

  /**
   * Deletes an intent whose task is published: the relay then never looks at it. Best effort (a
   * failure leaves the relay to publish the task again, which JetStream drops as a duplicate
   * unless NATS restarted meanwhile: a second, idempotent fan-out). Not awaited by the write.
   */
  function forget(seq: number): void {
    nats.jsm.streams.deleteMessage(intentStream, seq, false).catch((err: unknown) => {
      log.debug({ err: String(err), seq }, "fan-out intent left to the relay");
    });
  }

  /** Publishes the activity's fan-out task, deduplicated by id. `originWritten`: the caller stored
   * the origin entry, head and signal already. */
  async function publishTask(doc: Pick<ActivityDoc, "_id" | "tenant_id">, originWritten: boolean): Promise<void> {
    const task: ActivityTask = { kind: "activity", t: doc.tenant_id, a: doc._id, ...(originWritten ? { o: 1 as const } : {}) };
    await nats.js.publish(subject, encode(task), { msgID: `a:${doc._id}` });
  }

  /**
   * The outbox relay's publish of a marked activity (stored while NATS did not take its intent):
   * the task, then the mark's clear. (Clearing marks in the background of a write was tried: on
   * FerretDB v1 an update is a read-modify-write of the whole document, so a clear racing the
   * client's next change of the activity, a delete right after the add, wrote the old document
   * back and lost the delete. A write that stores a marked activity therefore leaves the mark to
   * this relay.)
   */
  async function publish(doc: Pick<ActivityDoc, "_id" | "tenant_id">): Promise<void> {
    await publishTask(doc, false);
    await activities.markPublished(doc._id);
  }

  /** The activity, from the cache the write path filled, else from MongoDB. */
  async function activityOf(tenantId: string, id: string): Promise<ActivityDoc | null> {
    const cached = await deps.cache.getMany(tenantId, [id]).catch(() => new Map<string, ActivityDoc>());
    return cached.get(id) ?? (await activities.get(tenantId, id));
  }

  const system = (tenantId: string) => scope({ tenantId, caller: { kind: "system" } });

  async function runActivity(task: ActivityTask, progress: () => void): Promise<void> {
    // A deletion the cache has not seen yet is caught by the chunk's check against MongoDB.
    const doc = await activityOf(task.t, task.a);
    if (!doc || doc.deleted_at) return;
    // Batch imports are quiet. The event id derives from the activity: a redelivered task
    // publishes the same message, which JetStream drops.
    if (!doc.batch) {
      await publishEvents(nats, [await deps.events.of("activity.added", doc, doc.created_at, uuidFrom("activity.added", doc._id))]);
    }
    const origin = doc.origin_feed;
    // The write path stored the origin entry already; only a write that died before it lands here.
    if (!task.o) {
      const inserted = await entries.upsertMany(task.t, [{ feed: origin, activity_id: doc._id, time: doc.time, origin }]);
      if (inserted) await showIn(task.t, [origin], doc);
    }
    const [group, id] = splitFeed(origin);
    // One pass over the followers. A chunk's message id is derived from its content, so a task
    // redelivered after a crash republishes only chunks that differ from those already sent
    // (the follower set may have changed meanwhile), and every current follower is covered.
    const followers = deps.peers().graph.streamFollowerFeeds(
      { feed: { group, id }, batchSize: CHUNK_SIZE },
      { ...system(task.t), timeoutMs: FOLLOWER_STREAM_TIMEOUT_MS },
    );
    // A follower set of one chunk is written here; a larger one is shared out as chunk tasks.
    // Each batch is held until the next arrives, so the last one knows whether it was alone.
    const publishChunk = async (feeds: string[]) => {
      await nats.js.publish(subject, encode({ kind: "chunk", t: task.t, a: task.a, feeds }), { msgID: `c:${task.a}:${digest(feeds)}` });
      progress();
    };
    let held: string[] | undefined;
    let chunks = 0;
    // The follower pass is the critical path of a large fan-out (its reads are one after another):
    // the next batch is read while the previous chunk is published. A failed publish fails the
    // task when awaited; the catch only keeps it from being an unhandled rejection meanwhile.
    let publishing: Promise<void> = Promise.resolve();
    for await (const { feeds } of followers) {
      if (!feeds.length) continue;
      if (held) {
        await publishing;
        publishing = publishChunk(held);
        publishing.catch(() => undefined);
        chunks++;
      }
      held = feeds;
    }
    await publishing;
    if (!held) return;
    if (chunks > 0) {
      await publishChunk(held);
      if (!doc.batch) await deps.lag?.published(task.t, task.a, doc.created_at, chunks + 1);
    } else if ((await runChunk({ kind: "chunk", t: task.t, a: task.a, feeds: held }, doc)) && !doc.batch) {
      deps.lag?.single(task.t, doc.created_at);
    }
  }

  /**
   * After `doc`'s entries in `feeds` are written: their heads take it and their signals move (the
   * signals someone reads: signals.ts). A batch import creates no head keys: the heads that exist
   * take it.
   */
  async function showIn(tenantId: string, feeds: string[], doc: ActivityDoc): Promise<void> {
    const entry = { id: doc._id, timeMs: doc.time.getTime() };
    await (doc.batch ? heads.addExisting(tenantId, feeds, entry) : heads.add(tenantId, feeds, entry));
    await signals.bump(tenantId, feeds);
  }

  /** Writes a chunk's entries; false when the activity is gone (nothing is left written). */
  async function runChunk(task: ChunkTask, known?: ActivityDoc): Promise<boolean> {
    const doc = known ?? (await activities.get(task.t, task.a));
    if (!doc || doc.deleted_at) return false;
    await entries.upsertMany(
      task.t,
      task.feeds.map((feed) => ({ feed, activity_id: doc._id, time: doc.time, origin: doc.origin_feed })),
    );
    // A delete that raced this chunk must not leave entries behind. A delete caches its tombstone
    // before it removes the activity's entries, so a chunk written after that removal began sees
    // the tombstone here (entries written before it are removed by the delete); the cache is
    // asked first, MongoDB when the cache has no answer.
    const after = await activityOf(task.t, task.a);
    if (!after || after.deleted_at) {
      await entries.removeActivity(task.t, task.a);
      return false;
    }
    await showIn(task.t, task.feeds, doc);
    return true;
  }

  async function handle(m: JsMsg): Promise<void> {
    const task = JSON.parse(new TextDecoder().decode(m.data)) as Task;
    // A large follower set takes a while: each published chunk tells JetStream the task lives.
    if (task.kind === "activity") await runActivity(task, () => m.working());
    else if (task.kind === "chunk") await runSharedChunk(task);
    else throw new Error(`unknown task kind`);
  }

  async function runSharedChunk(task: ChunkTask): Promise<void> {
    // The write path's cache spares MongoDB a read per chunk (MongoDB when the cache has no answer).
    const doc = await activityOf(task.t, task.a);
    if (!doc || !(await runChunk(task, doc)) || doc.batch) return;
    await deps.lag?.chunkWritten(task.t, task.a, doc.created_at, digest(task.feeds));
  }

  const worker = createQueueWorker({
    nats,
    log,
    queue: "fanout",
    durable: "worker",
    subject: "task",
    handle,
    maxDeliver: MAX_DELIVER,
    backoffMs: BACKOFF_MS,
    concurrency: IN_FLIGHT,
    ackWaitMs: ACK_WAIT_MS,
    heartbeat: true,
    ...(deps.beats ? { beats: { worker: "fanout" as const, beats: deps.beats } } : {}),
  });

  /**
   * An intent, once its grace has passed: the task is published again (JetStream drops it when
   * the write published it, by its message id) if the activity is stored, and looked for again
   * later while it is not.
   */
  async function handleIntent(m: JsMsg): Promise<void | { laterMs: number }> {
    const intent = JSON.parse(new TextDecoder().decode(m.data)) as Intent;
    const age = Date.now() - Number(m.info.timestampNanos / 1_000_000);
    if (age < intentGraceMs) return { laterMs: intentGraceMs - age };
    const doc = await activityOf(intent.t, intent.a);
    if (doc) {
      if (!doc.deleted_at) await publishTask(doc, false);
      return;
    }
    if (age < INTENT_GIVE_UP_MS) return { laterMs: INTENT_RETRY_MS };
  }

  const intentRelay = createQueueWorker({
    nats,
    log,
    queue: "fanout_intents",
    durable: "relay",
    subject: "intent",
    handle: handleIntent,
    // The grace, then a look every INTENT_RETRY_MS until INTENT_GIVE_UP_MS, with room for failures.
    maxDeliver: 2 + Math.ceil(INTENT_GIVE_UP_MS / INTENT_RETRY_MS) + MAX_DELIVER,
    concurrency: 32,
    // Polled, not pulled: a write deletes its intent within milliseconds, so the relay is handed
    // only the intents of writes still running or dead (with a standing pull, every intent was
    // delivered at once and put back for its grace: two more NATS messages per add).
    pollMs: Math.max(50, Math.min(2_000, intentGraceMs / 5)),
  });

  /** Republishes activities whose fan-out was never published (the process died in between). */
  function startRelay(intervalMs = 1000): void {
    const tick = async () => {
      try {
        const stale = await activities.unpublished(new Date(Date.now() - 2000), 100);
        // Whether the origin entry was written is unknown here: the worker writes it if missing.
        for (const doc of stale) await publish(doc);
      } catch (err) {
        log.debug({ err: String(err) }, "outbox relay pass failed");
      }
      if (!stopped) relayTimer = setTimeout(() => void tick(), intervalMs);
    };
    relayTimer = setTimeout(() => void tick(), intervalMs);
  }

  return {
    intend,
    forget,
    showIn,
    publishTask,
    publish,
    startWorker: () => worker.start(),
    /** The relays of intents and of outbox marks. */
    async startRelay(intervalMs = 1000) {
      await intentRelay.start();
      startRelay(intervalMs);
    },
    async stop() {
      stopped = true;
      clearTimeout(relayTimer);
      await Promise.all([worker.stop(), intentRelay.stop()]);
    },
  };
}

export type Fanout = ReturnType<typeof createFanout>;

export function splitFeed(feed: string): [string, string] {
  const i = feed.indexOf(":");
  return [feed.slice(0, i), feed.slice(i + 1)];
}
