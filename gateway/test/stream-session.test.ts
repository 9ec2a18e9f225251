import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import type { Logger } from "@feeds/kit";
import { encodeCursor } from "../src/stream/cursor.js";
import type { LiveFrame, LiveHub, Watcher } from "../src/stream/hub.js";
import { createSession, STREAM_QUEUE } from "../src/stream/session.js";

// One stream's session against a hub whose timing the test decides (the hub's NATS side is in
// the e2e tests): live frames that arrive during the replay, including ones the replay also
// holds, come out once and in order after it; a socket that takes nothing queues frames until
// STREAM_QUEUE, then the session ends with a reset naming the last frame the socket took.

/** A ServerResponse as the session uses it: what was written, and whether it takes more. */
class Socket extends EventEmitter {
  written: string[] = [];
  ended = false;
  writableNeedDrain = false;
  writableLength = 0;
  write(text: string) {
    this.written.push(text);
    return true;
  }
  end() {
    this.ended = true;
  }
  destroy() {}
  ids = () => this.written.join("").split("\n").filter((l) => l.startsWith("id: ")).map((l) => l.slice(4));
  events = () => this.written.join("").split("\n").filter((l) => l.startsWith("event: ")).map((l) => l.slice(7));
}

const frame = (seq: number, type = "activity.added"): LiveFrame => ({ seq, ms: 1000 + seq, type, data: `{"n":${seq}}` });
const log = { warn: () => undefined } as unknown as Logger;

function setup(replay: (deliver: (f: LiveFrame) => void) => AsyncGenerator<LiveFrame>) {
  const res = new Socket();
  let watcher: Watcher | undefined;
  const hub: Pick<LiveHub, "watch" | "unwatch" | "replay"> = {
    watch: (_s, w) => void (watcher = w),
    unwatch: () => undefined,
    replay: () => replay((f) => watcher?.deliver(f)),
  };
  const session = createSession({ res: res as unknown as ServerResponse, hub, subjects: ["s"], heartbeatMs: 60_000, log, onBeat: () => undefined, onEnd: () => undefined });
  return { res, session, deliver: (f: LiveFrame) => watcher?.deliver(f) };
}

describe("a stream session", () => {
  it("replays (after, at], then the live frames after `at` in order, each once, whatever arrived meanwhile", async () => {
    const { res, session, deliver } = setup(async function* (live) {
      for (let seq = 3; seq <= 6; seq++) {
        // While the replay runs, the hub hands over frames the replay holds too (5, 6) and later ones.
        if (seq === 4) [5, 6, 7, 8].forEach((s) => live(frame(s)));
        yield frame(seq);
      }
    });
    await session.run({ seq: 6, ms: 2000 }, { seq: 2, ms: 1002 }, false);
    deliver(frame(8)); // a repeat of a live frame
    deliver(frame(9));
    expect(res.written[0]).toBe("retry: 3000\n\n");
    expect(res.ids()).toEqual([3, 4, 5, 6, 7, 8, 9].map((s) => encodeCursor({ seq: s, ms: 1000 + s })));
    session.end();
  });

  it("a fresh stream names its position first; a stale cursor gets reset cursor_too_old with the position, then live", async () => {
    const fresh = setup(async function* () {});
    await fresh.session.run({ seq: 10, ms: 5 }, null, false);
    expect(fresh.res.written[0]).toBe(`retry: 3000\nid: ${encodeCursor({ seq: 10, ms: 5 })}\n\n`);
    // A stale cursor is not replayed: this frame must not show.
    const stale = setup(async function* () {
      yield frame(99);
    });
    await stale.session.run({ seq: 10, ms: 5 }, { seq: 1, ms: 1 }, true);
    stale.deliver(frame(11));
    expect(stale.res.events()).toEqual(["reset", "activity.added"]);
    expect(stale.res.written.join("")).toContain('data: {"reason":"cursor_too_old"}');
  });

  it(`a socket that takes nothing: ${STREAM_QUEUE.frames} frames queue, then reset consumer_too_slow naming the last frame it took`, async () => {
    const { res, session, deliver } = setup(async function* () {});
    await session.run({ seq: 0, ms: 0 }, null, false);
    deliver(frame(1));
    res.writableNeedDrain = true;
    for (let seq = 2; seq < 2 + STREAM_QUEUE.frames - 1; seq++) deliver(frame(seq));
    expect(res.ended).toBe(false);
    deliver(frame(5000));
    expect(res.ended).toBe(true);
    const text = res.written.join("");
    expect(text.endsWith(`id: ${encodeCursor({ seq: 1, ms: 1001 })}\nevent: reset\ndata: {"reason":"consumer_too_slow"}\n\n`)).toBe(true);
    expect(res.events()).toEqual(["activity.added", "reset"]);
  });
});
