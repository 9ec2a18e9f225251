import { describe, expect, it } from "vitest";
import { createCountBatcher } from "../src/count-batcher.js";

// The per-activity coalescing of count updates, without storage: which changes a count holds.

const tick = () => new Promise((r) => setTimeout(r, 5));

describe("count batcher", () => {
  it("a change asked for while a count runs waits for the next count, which holds every change queued meanwhile", async () => {
    const runs: { kinds: string[]; records: string[] }[] = [];
    let release: () => void = () => undefined;
    const batcher = createCountBatcher(async (_t, _a, kinds, records) => {
      runs.push({ kinds: kinds.sort(), records });
      if (runs.length === 1) await new Promise<void>((r) => (release = r));
    });
    const first = batcher.count("t", "a", "like", "r0");
    await tick();
    let laterDone = 0;
    const later = ["like", "clap", "like"].map((k, i) => batcher.count("t", "a", k, `r${i + 1}`).then(() => laterDone++));
    await tick();
    // The first count is still running: the three later changes are not answered by it.
    expect(runs).toEqual([{ kinds: ["like"], records: ["r0"] }]);
    expect(laterDone).toBe(0);
    release();
    await Promise.all([first, ...later]);
    expect(runs).toEqual([
      { kinds: ["like"], records: ["r0"] },
      { kinds: ["clap", "like"], records: ["r1", "r2", "r3"] },
    ]);
  });

  it("activities count apart; a failed count fails exactly the changes it held", async () => {
    const runs: string[] = [];
    const batcher = createCountBatcher(async (t, a) => {
      runs.push(`${t}/${a}`);
      if (a === "bad") throw new Error("count failed");
    });
    const results = await Promise.allSettled([batcher.count("t", "a", "like", "r1"), batcher.count("t", "bad", "like", "r2"), batcher.count("u", "a", "like", "r3")]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(runs.sort()).toEqual(["t/a", "t/bad", "u/a"]);
    // Nothing is left queued: the next change starts a count of its own.
    await batcher.count("t", "bad", "x", "r4").catch(() => undefined);
    expect(runs.filter((r) => r === "t/bad")).toHaveLength(2);
  });
});
