// In-flight attempts per destination, so that one slow or dead destination holds a bounded share
// of the worker's tasks and every other destination keeps the rest. A task whose destination has
// no free slot waits in line while the destination's attempts keep ending (a stall of `stallMs`
// with none ending sends the whole line away) and the line is short enough to pass in
// `lineWaitMs` at its pace (an attempt's time over its slots): a fast destination may queue many,
// a slow one few (and all lines together never longer than `maxWaiting`).
// Otherwise the task is turned away at once and the caller defers it for `deferMs`, which books
// the turned-away tasks of a busy destination one after another at that pace (at most two lines'
// wait ahead), so that each comes back about when a slot frees instead of again and again.
// Before any attempt of a key ended, its pace is at least the time its oldest attempt has run.

export type TakeResult = "taken" | "full" | "stalled";

export interface Slots {
  /** Takes a slot of `key`; `stallMs` 0: only a free one, never waiting. `onWait` runs if it joins the line. */
  take(key: string, stallMs: number, onWait?: () => void): Promise<TakeResult>;
  /** Frees a slot of `key` whose attempt took `attemptMs`. */
  release(key: string, attemptMs: number): void;
  /** How long a task of `key` turned away as "full" should stay away (ms). */
  deferMs(key: string): number;
}

interface Line {
  busy: number;
  waiting: ((r: TakeResult) => void)[];
  /** When an attempt of this key last ended. */
  progress: number;
  /** Moving average of an attempt's duration (ms); 0 until one ended. */
  attemptMs: number;
  /** When the line was made: its first attempt, still running while `attemptMs` is 0 (epoch ms). */
  opened: number;
  /** Since when tasks wait without a break (epoch ms). */
  queuedSince: number;
  /** Until when tasks turned away are booked (epoch ms). */
  booked: number;
  timer?: NodeJS.Timeout;
}

/** Shortest stay away, also while the pace is not known yet. */
const MIN_DEFER_MS = 50;

export function createSlots(perKey: number, lineWaitMs: number, maxWaiting = Infinity): Slots {
  const lines = new Map<string, Line>();
  /** Tasks waiting in every line. */
  let waiting = 0;
  // The pace: an attempt's time over the slots. Of the destination alone, not of this process:
  // a process that is itself the bottleneck must not take its own slowness for the destination's.
  const gap = (line: Line) => line.attemptMs / perKey;
  const idle = (line: Line) => line.busy <= 0 && line.waiting.length === 0 && line.booked <= Date.now();

  // One timer per key, re-armed from the last progress: O(1) per release whatever the line's length.
  // A check that runs late (this process's own event loop was held up) decides nothing: no
  // attempt could be seen ending meanwhile, whatever the destination did.
  function watch(line: Line, key: string, stallMs: number) {
    if (line.timer) return;
    let due = Date.now() + stallMs;
    const arm = (ms: number) => {
      due = Date.now() + ms;
      line.timer = setTimeout(check, ms);
    };
    // Decided after this turn's I/O callbacks, so that attempts that ended meanwhile count.
    const check = () => void setImmediate(decide);
    const decide = () => {
      const now = Date.now();
      const quiet = now - Math.max(line.progress, line.queuedSince);
      if (line.waiting.length === 0) line.timer = undefined;
      else if (now - due > stallMs / 2) arm(stallMs);
      else if (quiet < stallMs) arm(stallMs - quiet);
      else {
        line.timer = undefined;
        for (const w of line.waiting.splice(0)) w("stalled");
        if (idle(line)) lines.delete(key);
      }
    };
    arm(stallMs);
  }

  return {
    take(key, stallMs, onWait) {
      let line = lines.get(key);
      if (!line) lines.set(key, (line = { busy: 0, waiting: [], progress: Date.now(), attemptMs: 0, opened: Date.now(), queuedSince: 0, booked: 0 }));
      if (line.busy < perKey) {
        line.busy++;
        return Promise.resolve("taken");
      }
      if (stallMs <= 0 || waiting >= maxWaiting || (line.waiting.length + 1) * gap(line) > lineWaitMs) return Promise.resolve("full");
      const l = line;
      if (l.waiting.length === 0) l.queuedSince = Date.now();
      return new Promise<TakeResult>((resolve) => {
        waiting++;
        l.waiting.push((r) => {
          waiting--;
          resolve(r);
        });
        onWait?.();
        watch(l, key, stallMs);
      });
    },

    release(key, attemptMs) {
      const line = lines.get(key);
      if (!line) return;
      const now = Date.now();
      const ms = Math.max(1, attemptMs);
      line.attemptMs = line.attemptMs === 0 ? ms : line.attemptMs * 0.95 + ms * 0.05;
      line.progress = now;
      // The slot passes straight to the first in line.
      const next = line.waiting.shift();
      if (next) return next("taken");
      line.busy--;
      if (idle(line)) {
        clearTimeout(line.timer);
        lines.delete(key);
      }
    },

    deferMs(key) {
      const line = lines.get(key);
      if (!line) return MIN_DEFER_MS;
      const now = Date.now();
      // At most two lines' wait ahead: a pace misjudged high must not park tasks for long.
      const step = (line.attemptMs || now - line.opened) / perKey;
      line.booked = Math.min(now + 2 * lineWaitMs, Math.max(line.booked, now + line.waiting.length * step) + step);
      return Math.max(MIN_DEFER_MS, line.booked - now);
    },
  };
}
