import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnv } from "@feeds/kit/testing";
import { createFollowRepository, edgeKey, edgeOf, type FollowDoc } from "../src/follow-repository.js";
import { historyReconciler } from "../src/worker.js";
import type { HistoryTask } from "../src/tasks.js";

// The history worker's reconciliation without a lock: the edges are real documents; the feed
// service is a model of one source feed's entries (which activity came from which target), whose
// calls let a test change the edge at the very step a race would (an unfollow or a follow landing
// while a copy or a removal runs). Each race must end in the state of the last edge change.

interface FeedModel {
  /** activity id -> origin feed, for the source feed. */
  entries: Map<string, string>;
  calls: string[];
}

describe("history tasks, reconciled with the edge after their own writes", { timeout: 30_000 }, () => {
  const env = createTestEnv("graph_history", { db: true });
  beforeAll(env.open);
  afterAll(env.close);
  const edges = () => env.db.collection<FollowDoc>("follows");

  let tenants = 0;
  const SOURCE = "timeline:me";
  const TARGET = "user:star";
  /** The target's activities, newest first. */
  const HISTORY = ["a5", "a4", "a3", "a2", "a1"];

  async function setEdge(t: string, state: "live" | "removing" | "none", copyLimit = 3): Promise<void> {
    const _id = edgeKey(t, edgeOf(SOURCE, TARGET));
    await edges().deleteOne({ _id });
    if (state === "none") return;
    await edges().insertOne({ _id, tenant_id: t, source_feed: SOURCE, target_feed: TARGET, created_at: new Date(), copy_limit: copyLimit, ...(state === "removing" ? { removing: "u1" } : {}) });
  }

  /** The reconciler over the model; a hook set in `during` runs once inside the named call, before its effect. */
  function setUp() {
    const during: Partial<Record<"copy" | "remove", () => Promise<void>>> = {};
    const t = `t${++tenants}`;
    const feed: FeedModel = { entries: new Map(), calls: [] };
    const follows = createFollowRepository(env.db);
    let reads = 0;
    const counted = { live: (...a: Parameters<typeof follows.live>) => (reads++, follows.live(...a)) };
    const peer = {
      async copyHistory(req: { limit: number }) {
        feed.calls.push(`copy${req.limit}`);
        const hook = during.copy;
        during.copy = undefined;
        await hook?.();
        const inserted = HISTORY.slice(0, req.limit).filter((id) => !feed.entries.has(id));
        for (const id of inserted) feed.entries.set(id, TARGET);
        return { copied: inserted.length, inserted };
      },
      async removeHistory(req: { activityIds?: string[] }) {
        const only = req.activityIds ?? []; // a missing repeated field is empty on the wire
        feed.calls.push(only.length ? `remove ${only.join(",")}` : "remove all");
        const hook = during.remove;
        during.remove = undefined;
        await hook?.();
        for (const [id, origin] of feed.entries) if (origin === TARGET && (only.length === 0 || only.includes(id))) feed.entries.delete(id);
        return { removed: 0 };
      },
    };
    const run = historyReconciler({ follows: counted, peers: () => ({ feed: peer as never }) });
    const task = (k: "copy" | "remove", n?: number): HistoryTask => ({ t, s: SOURCE, g: TARGET, k, ...(n ? { n } : {}) });
    return { t, feed, run, task, during, reads: () => reads };
  }

  it("a copy while the edge lives keeps what it copied (one edge read after the copy)", async () => {
    const s = setUp();
    await setEdge(s.t, "live");
    await s.run(s.task("copy", 3));
    expect([...s.feed.entries.keys()]).toEqual(["a5", "a4", "a3"]);
    expect(s.feed.calls).toEqual(["copy3"]);
    expect(s.reads()).toBe(1);
  });

  it("a copy whose edge was unfollowed while it copied takes back only what it added: entries an earlier unfollow kept stay", async () => {
    const s = setUp();
    await setEdge(s.t, "live");
    s.feed.entries.set("a4", TARGET); // kept by an earlier unfollow with keep_history
    s.during.copy = () => setEdge(s.t, "removing");
    await s.run(s.task("copy", 3));
    expect(s.feed.calls).toEqual(["copy3", "remove a5,a3"]);
    expect([...s.feed.entries.keys()]).toEqual(["a4"]);
  });

  it("a copy with nothing to add reads no edge", async () => {
    const s = setUp();
    await setEdge(s.t, "none");
    for (const id of HISTORY.slice(0, 3)) s.feed.entries.set(id, TARGET);
    await s.run(s.task("copy", 3));
    expect(s.reads()).toBe(0);
    expect(s.feed.calls).toEqual(["copy3"]);
  });

  it("a removal while the edge lives (followed again) removes nothing", async () => {
    const s = setUp();
    await setEdge(s.t, "live");
    s.feed.entries.set("a5", TARGET);
    await s.run(s.task("remove"));
    expect(s.feed.calls).toEqual([]);
    expect([...s.feed.entries.keys()]).toEqual(["a5"]);
  });

  it("a removal that a new follow and its whole copy raced copies again with the edge's limit", async () => {
    const s = setUp();
    await setEdge(s.t, "none");
    s.feed.entries.set("a5", TARGET);
    // The new follow (limit 2) lands and its copy finishes while the removal runs, before its delete.
    s.during.remove = async () => {
      await setEdge(s.t, "live", 2);
      await s.run(s.task("copy", 2));
    };
    await s.run(s.task("remove"));
    expect(s.feed.calls).toEqual(["remove all", "copy2", "copy2"]);
    expect([...s.feed.entries.keys()].sort()).toEqual(["a4", "a5"]);
  });

  it("a removal with no follow after it leaves nothing from the target", async () => {
    const s = setUp();
    await setEdge(s.t, "removing");
    for (const id of HISTORY) s.feed.entries.set(id, TARGET);
    s.feed.entries.set("b1", "user:other");
    await s.run(s.task("remove"));
    expect(s.feed.calls).toEqual(["remove all"]);
    expect([...s.feed.entries.keys()]).toEqual(["b1"]);
  });
});
