// In-flight attempts per destination, so that one slow or dead destination holds a bounded share
// of the worker's tasks and every other destination keeps the rest. A task whose destination has
// no free slot waits in line while the destination's attempts keep ending (a stall of `stallMs`
// with none ending sends the whole line away) and the line is short enough to pass in
// `lineWaitMs` at the pace its attempts end: a fast destination may queue many, a slow one few.
// Otherwise the task is turned away at once and the caller defers it for `deferMs`, which books
// the turned-away tasks of a busy destination one after another at that pace, so that each comes
// back about when a slot frees instead of being turned away again and again.

export type TakeResult = "taken" | "full" | "stalled";

export interface Slots {
  /** Takes a slot of `key`; `stallMs` 0: only a free one, never waiting. */
  take(key: string, stallMs: number): Promise<TakeResult>;
  release(key: string): void;
  /** How long a task of `key` turned away as "full" should stay away (ms). */
  deferMs(key: string): number;
}

interface Line {
  busy: number;
  waiting: ((r: TakeResult) => void)[];
  /** When an attempt of this key last ended. */
  progress: number;
  /** Moving average of the time between attempts ending while tasks wait (ms); 0 until known. */
  gap: number;
  /** Until when tasks turned away are booked (epoch ms). */
  booked: number;
  timer?: NodeJS.Timeout;
}

/** Shortest stay away, also while the pace is not known yet; and the longest. */
const MIN_DEFER_MS = 50;
const MAX_DEFER_MS = 60_000;

export function createSlots(perKey: number, lineWaitMs: number): Slots {
  const lines = new Map<string, Line>();
  const idle = (line: Line) => line.busy <= 0 && line.waiting.length === 0 && line.booked <= Date.now();

  // One timer per key, re-armed from the last progress: O(1) per release whatever the line's length.
  function watch(line: Line, key: string, stallMs: number) {
    if (line.timer) return;
    const check = () => {
      const quiet = Date.now() - line.progress;
      if (line.waiting.length === 0) line.timer = undefined;
      else if (quiet < stallMs) line.timer = setTimeout(check, stallMs - quiet);
      else {
        line.timer = undefined;
        for (const w of line.waiting.splice(0)) w("stalled");
        if (idle(line)) lines.delete(key);
      }
    };
    line.timer = setTimeout(check, stallMs);
  }

  return {
    take(key, stallMs) {
      let line = lines.get(key);
      if (!line) lines.set(key, (line = { busy: 0, waiting: [], progress: Date.now(), gap: 0, booked: 0 }));
      if (line.busy < perKey) {
        line.busy++;
        return Promise.resolve("taken");
      }
      if (stallMs <= 0 || (line.waiting.length + 1) * line.gap > lineWaitMs) return Promise.resolve("full");
      const l = line;
      return new Promise<TakeResult>((resolve) => {
        l.waiting.push(resolve);
        watch(l, key, stallMs);
      });
    },

    release(key) {
      const line = lines.get(key);
      if (!line) return;
      const now = Date.now();
      // The pace counts only while tasks wait: an idle destination's gaps say nothing of it.
      if (line.waiting.length > 0) line.gap = line.gap === 0 ? now - line.progress : line.gap * 0.8 + (now - line.progress) * 0.2;
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
      if (!line || line.gap === 0) return MIN_DEFER_MS;
      const now = Date.now();
      line.booked = Math.min(now + MAX_DEFER_MS, Math.max(line.booked, now + line.waiting.length * line.gap) + line.gap);
      return Math.max(MIN_DEFER_MS, line.booked - now);
    },
  };
}
