import { describe, expect, it } from "vitest";
import type { Lease, Locks } from "@feeds/kit";
import { createCounter, edgeDeltas } from "../src/counter.js";
import type { Counts } from "../src/count-repository.js";
import { createFeedLocks } from "../src/feed-locks.js";

// The counter against a store that loses racing increments, as FerretDB v1 does (an update is a
// read, a pause, a write): counts still equal the edges, whatever the interleaving.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const jitter = () => sleep(Math.random() * 4);

/** An exclusive lock per key, in memory, with the API of `kit/src/lock.ts` (it gives up after `waitMs`). */
function memoryLocks(): Locks {
  const taken = new Set<string>();
  return {
    async withLock<T>(key: string, fn: (lease: Lease) => Promise<T>, opts: { waitMs?: number } = {}): Promise<T> {
      const deadline = Date.now() + (opts.waitMs ?? 8_000);
      while (taken.has(key)) {
        if (Date.now() > deadline) throw new Error(`lock ${key} not acquired`);
        await sleep(1);
      }
      taken.add(key);
      const lease: Lease = {
        signal: new AbortController().signal,
        stillHeld: async () => taken.has(key),
        assertHeld: async () => undefined,
      };
      try {
        return await fn(lease);
      } finally {
        taken.delete(key);
      }
    },
  };
}

function harness(locks: Locks = memoryLocks()) {
  const edges = new Set<string>();
  const stored = new Map<string, Counts>();
  const read = (feed: string) => ({ ...(stored.get(feed) ?? { follower_count: 0, following_count: 0 }) });
  const counter = createCounter({
    feedLocks: createFeedLocks(locks),
    follows: {
      countEdges: async (_t, feed, sides = ["follower_count", "following_count"]) => {
        const all = [...edges].map((e) => e.split(">"));
        await jitter();
        const c = {
          follower_count: all.filter(([, target]) => target === feed).length,
          following_count: all.filter(([source]) => source === feed).length,
        };
        return Object.fromEntries(sides.map((s) => [s, c[s]]));
      },
    },
    counts: {
      // Read, pause, write: two of these at once lose one.
      inc: async (_t, feed, d) => {
        const c = read(feed);
        await jitter();
        stored.set(feed, { follower_count: c.follower_count + d.follower_count, following_count: c.following_count + d.following_count });
      },
      set: async (_t, feed, c) => {
        const before = read(feed);
        await jitter();
        stored.set(feed, { ...before, ...c });
      },
    },
  });
  /** Follows or unfollows through the counter, the edge written under the locks. */
  const change = (source: string, target: string, add: boolean) =>
    counter.apply("t", [source, target], async () => {
      await jitter();
      const changed = add ? !edges.has(`${source}>${target}`) : edges.delete(`${source}>${target}`);
      if (add) edges.add(`${source}>${target}`);
      return { result: changed, deltas: edgeDeltas(changed ? [{ source, target }] : [], add ? 1 : -1) };
    });
  const mismatches = (feeds: string[]) =>
    feeds.flatMap((feed) => {
      const all = [...edges].map((e) => e.split(">"));
      const want = { follower_count: all.filter(([, t]) => t === feed).length, following_count: all.filter(([s]) => s === feed).length };
      return JSON.stringify(read(feed)) === JSON.stringify(want) ? [] : [`${feed}: ${JSON.stringify(read(feed))} != ${JSON.stringify(want)}`];
    });
  return { counter, change, edges, mismatches, stored };
}

describe("counter", () => {
  it("concurrent follows, repeats, unfollows and edges both ways leave counts equal to the edges", { timeout: 30_000 }, async () => {
    const { change, mismatches } = harness();
    const feeds = ["a", "b", "c", "d", "hot"];
    const ops: Promise<unknown>[] = [];
    for (let round = 0; round < 4; round++) {
      for (const s of feeds) {
        for (const t of feeds) {
          if (s === t) continue;
          ops.push(change(s, t, true), change(s, t, round % 2 === 0), change(t, s, true));
        }
      }
    }
    await Promise.all(ops);
    expect(mismatches(feeds)).toEqual([]);
  });

  it("a recount interleaved with counted edge changes stays exact", async () => {
    const { counter, change, edges, mismatches } = harness();
    // Edges written outside any lock (a batch import, a writer that died) are what recounts are for.
    edges.add("x>hot");
    edges.add("y>hot");
    const ops: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) {
      ops.push(change(`s${i}`, "hot", true));
      if (i % 5 === 0) ops.push(counter.recount("t", ["hot", "x"]));
    }
    await Promise.all(ops);
    await counter.recount("t", ["y"]);
    expect(mismatches(["hot", "x", "y", "s0", "s29"])).toEqual([]);
  });

  it("moves no count when the write outlasted half the locks' lease", async () => {
    const { counter, stored } = harness();
    const realNow = Date.now;
    try {
      const slowWrite = counter.apply("t", ["a", "b"], async () => {
        // The write took 6 s: another replica may hold the locks by now.
        const late = realNow() + 6_000;
        Date.now = () => late;
        return { result: true, deltas: edgeDeltas([{ source: "a", target: "b" }], 1) };
      });
      await expect(slowWrite).rejects.toMatchObject({ code: "INTERNAL" });
    } finally {
      Date.now = realNow;
    }
    expect(stored.size).toBe(0);
  });
});
