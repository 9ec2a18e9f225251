import type { ServerResponse } from "node:http";
import { processMetrics, type Logger } from "@feeds/kit";
import { encodeCursor, type Position } from "./cursor.js";
import { LOST, type LiveFrame, type LiveHub, type Watcher } from "./hub.js";

// One open stream: its frames written in order, each event once (docs/stream.md). Live frames
// that arrive while the session replays wait their turn; once live, a frame at or before the
// position the replay ran to is one the client had. A client that does not read gets its frames
// queued here, not in the socket: past STREAM_QUEUE (1,000 frames or 1 MiB with what the socket
// holds) the queue is dropped and the session ends with `reset` consumer_too_slow, whose id is
// the last frame the socket took, so the client's cursor resumes exactly after what it received.

export const STREAM_QUEUE = { frames: 1000, bytes: 1024 * 1024 } as const;
/** A client that does not read its last frames in this long loses its connection. */
const CLOSE_GRACE_MS = 60_000;
export const RETRY_MS = 3000;

export type ResetReason = "cursor_too_old" | "consumer_too_slow" | "server_draining";

export interface SessionOptions {
  res: ServerResponse;
  hub: Pick<LiveHub, "watch" | "unwatch" | "replay">;
  subjects: readonly string[];
  heartbeatMs: number;
  log: Logger;
  /** Every heartbeat (the stream's lease on its per-user slot). */
  onBeat(): void;
  /** Once, when the session ends for any reason. */
  onEnd(): void;
}

export function createSession(o: SessionOptions) {
  const { res, hub, subjects } = o;
  let live = false;
  let closed = false;
  /** Frames at or before this sequence are the client's already (or were replayed). */
  let threshold = Infinity;
  /** The id of the last frame queued, and of the last the socket took (the reset's: the client's cursor). */
  let lastId = "";
  let writtenId = "";
  const pending: LiveFrame[] = [];
  const queue: { text: string; id: string }[] = [];
  let queuedBytes = 0;
  let waiters: (() => void)[] = [];
  let beat: NodeJS.Timeout | undefined;

  const wake = () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };

  function write(text: string, id = lastId): void {
    if (closed) return;
    if (queue.length > 0 || res.writableNeedDrain) {
      queue.push({ text, id });
      queuedBytes += Buffer.byteLength(text);
      if (queue.length >= STREAM_QUEUE.frames || queuedBytes + res.writableLength >= STREAM_QUEUE.bytes) end("consumer_too_slow");
      return;
    }
    res.write(text);
    writtenId = id;
  }

  function flush(): void {
    while (queue.length > 0 && !res.writableNeedDrain && !closed) {
      const { text, id } = queue.shift() as { text: string; id: string };
      queuedBytes -= Buffer.byteLength(text);
      res.write(text);
      writtenId = id;
    }
    if (queue.length === 0 && !res.writableNeedDrain) wake();
  }

  function send(f: LiveFrame): void {
    lastId = encodeCursor({ seq: f.seq, ms: f.ms });
    write(`id: ${lastId}\nevent: ${f.type}\ndata: ${f.data}\n\n`, lastId);
  }

  /** Ends the session; with a reason, after a last `reset` frame (the queue unsent is dropped). */
  function end(reason?: ResetReason): void {
    if (closed) return;
    if (reason) {
      processMetrics().streamResets.inc({ reason });
      queue.length = 0;
      queuedBytes = 0;
      res.write(`${writtenId ? `id: ${writtenId}\n` : ""}event: reset\ndata: ${JSON.stringify({ reason })}\n\n`);
    }
    closed = true;
    hub.unwatch(subjects, watcher);
    clearInterval(beat);
    pending.length = 0;
    wake();
    res.end();
    // A client that never reads keeps the socket's last bytes unsent: it is cut after a grace.
    setTimeout(() => res.destroy(), CLOSE_GRACE_MS).unref();
    o.onEnd();
  }

  const watcher: Watcher = {
    deliver(f) {
      if (closed) return;
      if (f.type === LOST) return end();
      if (!live) {
        pending.push(f);
        if (pending.length >= STREAM_QUEUE.frames) end("consumer_too_slow");
        return;
      }
      if (f.seq > threshold) {
        threshold = f.seq;
        send(f);
      }
    },
  };

  /** Resolves once the queue is empty and the socket takes more (or the session ended). */
  const writable = () => (closed || (queue.length === 0 && !res.writableNeedDrain) ? Promise.resolve() : new Promise<void>((r) => waiters.push(r)));

  hub.watch(subjects, watcher);

  return {
    get closed() {
      return closed;
    },
    end,
    /** Forgets a session that never started (its request answered an error instead). */
    cancel(): void {
      closed = true;
      hub.unwatch(subjects, watcher);
      pending.length = 0;
    },
    /**
     * Writes the start and the replay, then goes live. `at`: the stream's end when the watcher
     * was registered; `after`: the client's cursor (null: a fresh stream); `stale`: that cursor
     * is past the window.
     */
    async run(at: Position, after: Position | null, stale: boolean): Promise<void> {
      res.on("drain", flush);
      res.on("close", () => end());
      beat = setInterval(() => {
        write(": keep-alive\n\n");
        o.onBeat();
      }, o.heartbeatMs);
      if (after && !stale) {
        lastId = encodeCursor(after);
        write(`retry: ${RETRY_MS}\n\n`);
        for await (const f of hub.replay(subjects, after.seq, at.seq)) {
          if (closed) return;
          send(f);
          await writable();
        }
      } else {
        lastId = encodeCursor(at);
        write(`retry: ${RETRY_MS}\nid: ${lastId}\n\n`);
        if (after) {
          processMetrics().streamResets.inc({ reason: "cursor_too_old" });
          write(`id: ${lastId}\nevent: reset\ndata: ${JSON.stringify({ reason: "cursor_too_old" })}\n\n`);
        }
      }
      if (closed) return;
      threshold = at.seq;
      live = true;
      for (const f of pending.splice(0)) {
        if (f.seq <= threshold) continue;
        threshold = f.seq;
        send(f);
      }
    },
  };
}

export type Session = ReturnType<typeof createSession>;
