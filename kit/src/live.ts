import { createHash, randomUUID } from "node:crypto";
import { DiscardPolicy, RetentionPolicy, StorageType } from "nats";
import { isNotFound, publishOptions, type Nats } from "./nats.js";
import type { OutboxMessage } from "./outbox.js";
import type { RedisConn } from "./redis.js";

// The live stream's events (docs/stream.md): producers publish one message per feed (or per
// notification owner) to the `live` JetStream stream, which is the replay buffer: limits
// retention by age and by messages per subject, so every subject (a tenant's feed, or a user's
// notifications) keeps its newest events for the window. The stream sequence is the cursor:
// one total order over every event, so a client's feed set replays in order from any point.
// The gateways read it (one ordered consumer per gateway process, and per resume a replay).
//
// A feed's events go into the buffer only while the feed is watched: a gateway marks each feed a
// stream opens on (a Redis key per tenant and feed, kept for the replay window after the last
// stream on it ends) with the stream's sequence when the mark was made, and producers publish an
// activity's per-feed events (fan-out, patches, deletes) only to marked feeds. An event left out
// belongs to a feed nobody could resume: a resume of a feed whose mark is newer than its cursor
// (or gone) is told `reset` instead. What a producer leaves out had its entry written before it
// looked at the mark, so a stream that made the mark after sees it in its first read over REST.
// Without Redis a producer publishes to every feed. An owner's notifications are watched the same
// way (their mark: `ownerWatchName(owner)` among the names a stream marks): the notification
// service publishes notification.added and notification.counts, and computes the group counts
// they carry, only for a watched owner.

export type LiveEventType = "activity.added" | "activity.updated" | "activity.deleted" | "notification.added" | "notification.counts" | "feed.watched";

/** What a message of the `live` stream carries (JSON). `data` lacks what the gateway resolves at delivery (actor_user). */
export interface LiveEvent {
  type: LiveEventType;
  /** Activity events: the feed (`group:id`) the event is about. */
  feed?: string;
  data: Record<string, unknown>;
}

/** The replay window defaults: 24 hours and 10,000 events per feed, whichever is smaller. */
export const LIVE_DEFAULTS = { windowMs: 24 * 3600_000, eventsPerFeed: 10_000 } as const;
/**
 * The stream keeps an hour beyond the window: a cursor is judged by the gateway's clock against
 * timestamps of the NATS server's, and a skew must not make a cursor in the window look valid
 * while its events are gone.
 */
export const LIVE_AGE_MARGIN_MS = 3600_000;

// Subject tokens hold no `.`, `*`, `>` or space: ids may hold `.`, so every variable part is
// base64url (A-Z a-z 0-9 - _).
const token = (s: string) => Buffer.from(s, "utf8").toString("base64url");

export const liveStreamName = (nats: Nats) => nats.stream("live");
export const liveFeedSubject = (nats: Nats, tenantId: string, feed: string) => nats.subject("live", token(tenantId), "f", token(feed));
export const liveOwnerSubject = (nats: Nats, tenantId: string, owner: string) => nats.subject("live", token(tenantId), "n", token(owner));

export interface LiveStreamSettings {
  windowMs: number;
  eventsPerFeed: number;
}

/**
 * Creates the `live` stream when missing (producers: with the defaults). `apply` (gateways, who
 * read it and hold the configured window) also brings an existing stream's limits to `settings`.
 */
export async function ensureLiveStream(nats: Nats, settings: LiveStreamSettings = LIVE_DEFAULTS, apply = false): Promise<void> {
  const name = liveStreamName(nats);
  const limits = {
    max_age: (settings.windowMs + LIVE_AGE_MARGIN_MS) * 1_000_000,
    max_msgs_per_subject: settings.eventsPerFeed,
  };
  let info;
  try {
    info = await nats.jsm.streams.info(name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await nats.jsm.streams.add({
        name,
        subjects: [nats.subject("live", ">")],
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        storage: StorageType.File,
        num_replicas: nats.replicas,
        allow_direct: true,
        ...limits,
      });
      return;
    } catch (e) {
      // Another process created it meanwhile.
      info = await nats.jsm.streams.info(name).catch(() => {
        throw e;
      });
    }
  }
  const c = info.config;
  if (apply && (c.max_age !== limits.max_age || c.max_msgs_per_subject !== limits.max_msgs_per_subject || c.num_replicas !== nats.replicas)) {
    await nats.jsm.streams.update(name, { ...c, ...limits, num_replicas: nats.replicas });
  }
}

const short = (s: string) => createHash("sha256").update(s).digest("base64url").slice(0, 16);

/**
 * One message per feed of `feeds`: `type` of `activity` (JSON without actor_user). `key` names the
 * act (e.g. `<activity id>:<version>`): with the feed it makes the JetStream message id, so a
 * writer's and a relay's publish of one act are one event.
 */
export function liveActivityMessages(nats: Nats, tenantId: string, feeds: readonly string[], type: Extract<LiveEventType, `activity.${string}`>, activity: Record<string, unknown>, key: string): OutboxMessage[] {
  return feeds.map((feed) => {
    const event: LiveEvent = { type, feed, data: activity };
    return { subject: liveFeedSubject(nats, tenantId, feed), msgId: `live:${type}:${key}:${short(feed)}`, data: JSON.stringify(event) };
  });
}

/** The message of a notification event for its owner (`key`: the notification's or the mark's id). */
export function liveOwnerMessage(nats: Nats, tenantId: string, owner: string, type: Extract<LiveEventType, `notification.${string}`>, data: Record<string, unknown>, key: string): OutboxMessage {
  const event: LiveEvent = { type, data };
  return { subject: liveOwnerSubject(nats, tenantId, owner), msgId: `live:${type}:${key}`, data: JSON.stringify(event) };
}

/** Publishes live messages (up to 64 at once); throws when one was not stored. */
export async function publishLive(nats: Nats, messages: readonly OutboxMessage[]): Promise<void> {
  const enc = new TextEncoder();
  for (let i = 0; i < messages.length; i += 64) {
    await Promise.all(messages.slice(i, i + 64).map((m) => nats.js.publish(m.subject, enc.encode(m.data), publishOptions(m.msgId))));
  }
}

/** The key that says a tenant's feed is watched; it holds the stream sequence when the mark was made. */
export const liveWatchKey = (redis: RedisConn, tenantId: string, feed: string) => redis.tenantKey(tenantId, "lw", feed);
/** The key that says a tenant's user's notifications are watched (as `liveWatchKey`). */
export const liveOwnerWatchKey = (redis: RedisConn, tenantId: string, owner: string) => redis.tenantKey(tenantId, "lwn", owner);

/** What `markWatched` is given for an owner's notifications beside feeds (a feed ref starts with its group, never `~`). */
const OWNER_PREFIX = "~n/";
export const ownerWatchName = (owner: string) => `${OWNER_PREFIX}${owner}`;

/** The Redis key and the live subject of a watched name: a feed, or an owner's notifications (`ownerWatchName`). */
interface WatchTarget {
  key: string;
  subject: string;
  feed?: string;
}

function watchTarget(nats: Nats, redis: RedisConn, tenantId: string, name: string): WatchTarget {
  if (name.startsWith(OWNER_PREFIX)) {
    const owner = name.slice(OWNER_PREFIX.length);
    return { key: liveOwnerWatchKey(redis, tenantId, owner), subject: liveOwnerSubject(nats, tenantId, owner) };
  }
  return { key: liveWatchKey(redis, tenantId, name), subject: liveFeedSubject(nats, tenantId, name), feed: name };
}

/** MGETs of marks at most this many keys at once. */
const WATCH_CHUNK = 500;

/**
 * Of a tenant's `feeds`, those a stream watched within the replay window (marked): the feeds whose
 * live events go into the buffer. Every feed when Redis does not answer.
 */
export async function watchedFeeds(redis: RedisConn, tenantId: string, feeds: readonly string[]): Promise<string[]> {
  if (feeds.length === 0) return [];
  try {
    const watched: string[] = [];
    for (let i = 0; i < feeds.length; i += WATCH_CHUNK) {
      const part = feeds.slice(i, i + WATCH_CHUNK);
      const marks = await redis.redis.mget(...part.map((f) => liveWatchKey(redis, tenantId, f)));
      part.forEach((f, j) => {
        if (marks[j] !== null && marks[j] !== undefined) watched.push(f);
      });
    }
    return watched;
  } catch {
    return [...feeds];
  }
}

/**
 * Whether a stream watched the owner's notifications within the replay window (their live events
 * go into the buffer). True when Redis does not answer.
 */
export async function ownerWatched(redis: RedisConn, tenantId: string, owner: string): Promise<boolean> {
  try {
    return (await redis.redis.exists(liveOwnerWatchKey(redis, tenantId, owner))) === 1;
  } catch {
    return true;
  }
}

/** The event type of a mark's message in a feed's subject: the buffer's point from which the feed is complete (gateways skip it). */
export const LIVE_MARK_TYPE = "feed.watched";
/** A mark being made: its message is not published yet (a resume counts it as missing). */
const PENDING = "pending";

/**
 * Marks a tenant's `feeds` watched for `ttlMs` more (a name may also be `ownerWatchName(owner)`:
 * the owner's notifications). A feed without a mark gets one: its subject gets a mark message
 * first, whose stream sequence the mark then holds, so a cursor at or after it is complete for the
 * feed (every event of the feed published after the mark was made has a later sequence). A marked
 * feed keeps its mark. Answers each feed's mark (NaN while another gateway is making it) and the
 * feeds that had none.
 */
export async function markWatched(nats: Nats, redis: RedisConn, tenantId: string, feeds: readonly string[], ttlMs: number): Promise<{ since: Map<string, number>; created: string[] }> {
  const since = new Map<string, number>();
  if (feeds.length === 0) return { since, created: [] };
  // One tenant's keys share a hash slot: one pipeline, also on a cluster.
  const p = redis.redis.pipeline();
  const targets = feeds.map((name) => ({ name, target: watchTarget(nats, redis, tenantId, name) }));
  for (const { target: { key } } of targets) {
    p.set(key, PENDING, "PX", ttlMs, "NX");
    p.pexpire(key, ttlMs);
    p.get(key);
  }
  const results = (await p.exec()) ?? [];
  /** The feeds that had no mark, with their targets. */
  const made: typeof targets = [];
  targets.forEach(({ name, target }, i) => {
    const [setErr, set] = results[i * 3] ?? [];
    const [getErr, value] = results[i * 3 + 2] ?? [];
    const err = setErr ?? getErr;
    if (err) throw err instanceof Error ? err : new Error(String(err));
    if (set === "OK") made.push({ name, target });
    else since.set(name, value === PENDING || typeof value !== "string" ? NaN : Number(value));
  });
  const created = made.map((m) => m.name);
  if (created.length === 0) return { since, created };
  const enc = new TextEncoder();
  let acks;
  try {
    acks = await Promise.all(
      made.map(({ target }) => {
        const event: LiveEvent = { type: LIVE_MARK_TYPE, ...(target.feed !== undefined ? { feed: target.feed } : {}), data: {} };
        return nats.js.publish(target.subject, enc.encode(JSON.stringify(event)), publishOptions(`live:mark:${randomUUID()}`));
      }),
    );
  } catch (err) {
    // Not made: the next stream on these feeds makes them (a mark left pending would make every
    // resume of its feed a reset until it expired).
    await redis.redis.del(...made.map((m) => m.target.key)).catch(() => undefined);
    throw err;
  }
  const q = redis.redis.pipeline();
  made.forEach(({ name, target }, i) => {
    const seq = acks[i]?.seq ?? NaN;
    since.set(name, seq);
    q.set(target.key, String(seq), "PX", ttlMs, "XX");
  });
  await q.exec();
  return { since, created };
}
