import { DeliverPolicy, type ConsumerMessages, type JetStreamManager, type StoredMsg } from "nats";
import {
  actorUserId,
  actorUserJson,
  ensureLiveStream,
  LIVE_MARK_TYPE,
  liveStreamName,
  scope,
  type Clients,
  type LiveEvent,
  type LiveStreamSettings,
  type Logger,
  type Nats,
} from "@feeds/kit";
import type { Position } from "./cursor.js";

// One gateway process's view of the live NATS stream (docs/stream.md): an ordered consumer from
// the stream's end at boot hands every new event to the streams watching its subject (a feed of a
// tenant, or a user's notifications), built once into the frame's JSON; a resume reads the
// events after its cursor straight from the stream (direct gets, one subject at a time, merged by
// sequence). actor_user is resolved here, at delivery, as a read resolves it.

/** One event as a stream writes it: its position and the frame's `event:` and `data:`. */
export interface LiveFrame {
  seq: number;
  ms: number;
  type: string;
  data: string;
}

/** The `type` of a frame that says an event could not be built: the stream ends, its client resumes. */
export const LOST = "lost";

export interface Watcher {
  deliver(frame: LiveFrame): void;
}

/** actor_user records are shared between events for this long (milliseconds). */
const USER_CACHE_MS = 1000;
const USER_CACHE_MAX = 10_000;

const tenantOfSubject = (subject: string): string => {
  const parts = subject.split(".");
  return Buffer.from(parts[parts.length - 3] ?? "", "base64url").toString("utf8");
};

interface DirectGet {
  getMessage(stream: string, query: { next_by_subj: string; seq: number }): Promise<StoredMsg>;
}

const nanosToMs = (n: number) => Math.floor(n / 1e6);

export function createLiveHub(deps: { nats: Nats; users: Clients["users"]; log: Logger; settings: LiveStreamSettings }) {
  const { nats, log } = deps;
  const stream = liveStreamName(nats);
  // The manager's direct-get API (the stream allows it): its type is on the implementation only.
  const direct = (nats.jsm as JetStreamManager & { direct: DirectGet }).direct;
  const watchers = new Map<string, Set<Watcher>>();
  const users = new Map<string, { at: number; value: ReturnType<typeof actorUserJson> | null }>();
  let messages: ConsumerMessages | null = null;
  let loop: Promise<void> | null = null;

  async function actorUser(tenantId: string, actor: unknown): Promise<ReturnType<typeof actorUserJson> | null> {
    const uid = typeof actor === "string" ? actorUserId(actor) : null;
    if (uid === null) return null;
    const key = `${tenantId}/${uid}`;
    const hit = users.get(key);
    if (hit && Date.now() - hit.at < USER_CACHE_MS) return hit.value;
    const res = await deps.users.getUsers({ ids: [uid] }, scope({ tenantId, caller: { kind: "server" } }));
    const u = res.users[0];
    const value = u ? actorUserJson(u) : null;
    if (users.size >= USER_CACHE_MAX) users.clear();
    users.set(key, { at: Date.now(), value });
    return value;
  }

  /** The frame of a stored event: its data as the stream shows it (actor_user resolved). */
  async function frameOf(subject: string, seq: number, ms: number, raw: Uint8Array): Promise<LiveFrame | null> {
    let ev: LiveEvent;
    try {
      ev = JSON.parse(new TextDecoder().decode(raw)) as LiveEvent;
    } catch {
      log.warn({ seq }, "live event not JSON: skipped");
      return null;
    }
    // A feed's mark (kit's markWatched) is the buffer's bookkeeping, not an event.
    if (ev.type === LIVE_MARK_TYPE) return null;
    const tenantId = tenantOfSubject(subject);
    let data: Record<string, unknown>;
    if (ev.type.startsWith("activity.")) {
      const activity = { ...ev.data, actor_user: await actorUser(tenantId, ev.data.actor) };
      data = { feed: ev.feed, activity };
    } else if (ev.type === "notification.added") {
      const n = (ev.data.notification ?? {}) as Record<string, unknown>;
      data = { ...ev.data, notification: { ...n, actor_user: await actorUser(tenantId, n.actor) } };
    } else {
      data = ev.data;
    }
    return { seq, ms, type: ev.type, data: JSON.stringify(data) };
  }

  async function run(m: ConsumerMessages): Promise<void> {
    for await (const msg of m) {
      const set = watchers.get(msg.subject);
      if (!set?.size) continue;
      try {
        const frame = await frameOf(msg.subject, msg.seq, nanosToMs(msg.info.timestampNanos), msg.data);
        if (frame) for (const w of [...set]) w.deliver(frame);
      } catch (err) {
        // A lost event here would be a gap: the watchers are told to reconnect (their cursors replay it).
        log.error({ err: String(err), seq: msg.seq }, "live event not delivered; its watchers reconnect");
        for (const w of [...set]) w.deliver({ seq: -1, ms: 0, type: LOST, data: "" });
      }
    }
  }

  /** The first stored message of `subject` at or after `seq`, or null. */
  async function nextOf(subject: string, seq: number) {
    try {
      return await direct.getMessage(stream, { next_by_subj: subject, seq });
    } catch (err) {
      if ((err as { code?: unknown }).code === "404") return null;
      throw err;
    }
  }

  return {
    /** Creates the stream with the configured window and starts reading it from its end. */
    async start(): Promise<void> {
      await ensureLiveStream(nats, deps.settings, true);
      const info = await nats.jsm.streams.info(stream);
      const consumer = await nats.js.consumers.get(stream, {
        filterSubjects: nats.subject("live", ">"),
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: info.state.last_seq + 1,
      });
      messages = await consumer.consume();
      loop = run(messages).catch((err: unknown) => log.error({ err: String(err) }, "live stream consumer stopped"));
    },
    async stop(): Promise<void> {
      await messages?.close();
      await loop;
    },
    watch(subjects: readonly string[], w: Watcher): void {
      for (const s of subjects) {
        let set = watchers.get(s);
        if (!set) watchers.set(s, (set = new Set()));
        set.add(w);
      }
    },
    unwatch(subjects: readonly string[], w: Watcher): void {
      for (const s of subjects) {
        const set = watchers.get(s);
        set?.delete(w);
        if (set && set.size === 0) watchers.delete(s);
      }
    },
    /** The stream's end now: every event after it reaches the watchers registered before this call. */
    async position(): Promise<Position> {
      const info = await nats.jsm.streams.info(stream);
      return { seq: info.state.last_seq, ms: Date.now() };
    },
    /**
     * Whether an event of `subjects` after `after` may be gone: older than the window, or past
     * the per-subject count of a subject that keeps that many (the oldest kept is newer).
     */
    async tooOld(subjects: readonly string[], after: Position, windowMs: number): Promise<boolean> {
      if (after.ms < Date.now() - windowMs) return true;
      const checks = await Promise.all(
        subjects.map(async (s) => {
          const info = await nats.jsm.streams.info(stream, { subjects_filter: s });
          const kept = info.state.subjects?.[s] ?? 0;
          const cap = info.config.max_msgs_per_subject;
          if (cap <= 0 || kept < cap) return false;
          const oldest = await nextOf(s, 1);
          return oldest !== null && oldest.seq > after.seq + 1;
        }),
      );
      return checks.some(Boolean);
    },
    /** The events of `subjects` in (after, upTo], in stream order, each once. */
    async *replay(subjects: readonly string[], after: number, upTo: number): AsyncGenerator<LiveFrame> {
      const heads = new Map<string, Awaited<ReturnType<typeof nextOf>>>();
      await Promise.all(subjects.map(async (s) => heads.set(s, after < upTo ? await nextOf(s, after + 1) : null)));
      for (;;) {
        let subject: string | null = null;
        let seq = Infinity;
        for (const [s, m] of heads) if (m && m.seq <= upTo && m.seq < seq) [subject, seq] = [s, m.seq];
        if (subject === null) return;
        const m = heads.get(subject);
        if (!m) return;
        heads.set(subject, await nextOf(subject, m.seq + 1));
        const frame = await frameOf(m.subject, m.seq, m.time.getTime(), m.data);
        if (frame) yield frame;
      }
    },
  };
}

export type LiveHub = ReturnType<typeof createLiveHub>;
