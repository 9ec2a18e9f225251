import { createHash } from "node:crypto";
import type { JsMsg } from "nats";
import { createQueueWorker, liveActivityMessages, publishEvents, publishLive, publishOptions, scope, uuidFrom, type Clients, type Logger, type Nats, type OutboxMessage, type WorkerBeats } from "@feeds/kit";
import type { ActivityDoc, ActivityRepository } from "./activity-repository.js";
import type { EntryRepository } from "./entry-repository.js";
import type { Signals } from "./signals.js";
import type { Heads } from "./heads.js";
import type { ActivityCache } from "./activity-cache.js";
import { liveActivityJson, type ActivityEvents } from "./events.js";
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
 * back). Running tasks send heartbeats every third of it, so a long one is not redelivered. It
 * bounds how long a crashed worker's fan-out waits (with 5 s, a 5,000-follower fan-out finished
 * 8.9–10.0 s after its process was killed, 2 s of which its restart took); a loop stalled longer
 * than it only costs a redelivery, which writes nothing twice (entries are keyed).
 */
export const ACK_WAIT_MS = 2500;

interface ActivityTask {
  kind: "activity";
  t: string;
  a: string;
}
interface ChunkTask {
  kind: "chunk";
  t: string;
  a: string;
  feeds: string[];
}
type Task = ActivityTask | ChunkTask;

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
  /** activity.added: published by the activity task, which the add's pending change makes durable. */
  events: ActivityEvents;
  log: Logger;
  /** Readiness names the fan-out worker when its loop stops beating. */
  beats?: WorkerBeats;
  /** Live writes' fan-out lag (batch imports are not timed). */
  lag?: FanoutLag;
  /** Of a tenant's feeds, those whose live events are buffered (kit's watchedFeeds); all when absent. */
  liveFeeds?: (tenantId: string, feeds: string[]) => Promise<string[]>;
}

export function createFanout(deps: FanoutDeps) {
  const { nats, activities, entries, signals, heads, log } = deps;
  const subject = nats.subject("fanout", "task");
  const encode = (t: Task) => new TextEncoder().encode(JSON.stringify(t));

  /**
   * The activity's fan-out task as an outbox message (message id `a:<activity id>`: a second
   * publish, the relay's for a writer that had published it, is dropped by JetStream). It is
   * published once the origin entry is written (by the write, or by the relay's finish).
   */
  function taskMessage(doc: Pick<ActivityDoc, "_id" | "tenant_id">): OutboxMessage {
    const task: ActivityTask = { kind: "activity", t: doc.tenant_id, a: doc._id };
    return { subject, msgId: `a:${doc._id}`, data: JSON.stringify(task) };
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
    // The origin entry is written: the task is published after it (by the write or the relay).
    const [group, id] = splitFeed(doc.origin_feed);
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
      await nats.js.publish(subject, encode({ kind: "chunk", t: task.t, a: task.a, feeds }), publishOptions(`c:${task.a}:${digest(feeds)}`));
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
   * signals someone reads: signals.ts), then their live streams get activity.added (the feeds a
   * stream watches: kit's watchedFeeds). A batch import creates no head keys (the heads that
   * exist take it) and no live events.
   */
  async function showIn(tenantId: string, feeds: string[], doc: ActivityDoc): Promise<void> {
    const entry = { id: doc._id, timeMs: doc.time.getTime() };
    await (doc.batch ? heads.addExisting(tenantId, feeds, entry) : heads.add(tenantId, feeds, entry));
    await signals.bump(tenantId, feeds);
    if (doc.batch) return;
    const watched = deps.liveFeeds ? await deps.liveFeeds(tenantId, feeds) : feeds;
    await publishLive(nats, liveActivityMessages(nats, tenantId, watched, "activity.added", liveActivityJson(doc), doc._id));
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

  return {
    taskMessage,
    showIn,
    activityOf,
    startWorker: () => worker.start(),
    stop: () => worker.stop(),
  };
}

export type Fanout = ReturnType<typeof createFanout>;

export function splitFeed(feed: string): [string, string] {
  const i = feed.indexOf(":");
  return [feed.slice(0, i), feed.slice(i + 1)];
}
