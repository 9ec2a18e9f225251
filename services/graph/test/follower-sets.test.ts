import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnv } from "@feeds/kit/testing";
import { createFollowerSets, SMALL_SET, type FollowerSets } from "../src/follower-sets.js";

// The fan-out's follower-set cache on real Redis, in a namespace of its own; the edges are a map
// here and every MongoDB pass over them is counted.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("follower sets", () => {
  const env = createTestEnv("graph_followers", { redis: true });
  const edges = new Map<string, string[]>();
  /** MongoDB passes over a feed's edges (each `followerFeeds` call). */
  let reads = 0;
  let pause = 0;
  const follows = {
    async *followerFeeds(_t: string, feed: string, size: number) {
      reads++;
      const seen = [...(edges.get(feed) ?? [])];
      if (pause) await sleep(pause);
      for (let i = 0; i < seen.length; i += size) yield seen.slice(i, i + size);
    },
  };
  const tenant = "t1";
  /** Every batch of one stream, flattened, and the batch sizes. */
  async function all(sets: FollowerSets, feed: string, size = 500) {
    const batches: string[][] = [];
    for await (const b of sets.stream(tenant, feed, size)) batches.push(b);
    return { feeds: batches.flat(), sizes: batches.map((b) => b.length) };
  }

  beforeAll(env.open);
  afterAll(env.close);

  it("a small set is read from the edges once, then from Redis, and again after each invalidation", async () => {
    const sets = createFollowerSets(env.redis, follows);
    edges.set("user:a", ["timeline:1", "timeline:2", "timeline:3"]);
    reads = 0;
    expect(await all(sets, "user:a", 2)).toEqual({ feeds: ["timeline:1", "timeline:2", "timeline:3"], sizes: [2, 1] });
    expect(await all(sets, "user:a", 2)).toEqual({ feeds: ["timeline:1", "timeline:2", "timeline:3"], sizes: [2, 1] });
    expect(reads).toBe(1);
    edges.set("user:a", ["timeline:1", "timeline:2", "timeline:3", "timeline:4"]);
    await sets.invalidate(tenant, ["timeline:4", "user:a"]);
    expect((await all(sets, "user:a")).feeds).toEqual(["timeline:1", "timeline:2", "timeline:3", "timeline:4"]);
    expect(reads).toBe(2);
    // No followers is a set too.
    expect((await all(sets, "user:nobody")).feeds).toEqual([]);
    expect((await all(sets, "user:nobody")).feeds).toEqual([]);
    expect(reads).toBe(3);
  });

  it("a set over SMALL_SET is streamed from the edges in one pass every time, and never cached", async () => {
    const sets = createFollowerSets(env.redis, follows);
    const star = Array.from({ length: SMALL_SET + 1 }, (_, i) => `timeline:${i}`);
    edges.set("user:star", star);
    reads = 0;
    expect((await all(sets, "user:star")).feeds).toEqual(star);
    expect((await all(sets, "user:star")).feeds).toEqual(star);
    expect(reads).toBe(2);
    // What the first pass stored is "not here", not the set.
    const stored = await env.redis.redis.get(env.redis.tenantKey(tenant, "rc", "followers", "user:star"));
    expect(stored).toBe("{}");
  });

  it("a stream its consumer left early stores nothing: the next one reads the edges", async () => {
    const sets = createFollowerSets(env.redis, follows);
    edges.set("user:c", ["timeline:1", "timeline:2", "timeline:3"]);
    reads = 0;
    for await (const b of sets.stream(tenant, "user:c", 1)) {
      expect(b).toEqual(["timeline:1"]);
      break;
    }
    expect((await all(sets, "user:c")).feeds).toEqual(["timeline:1", "timeline:2", "timeline:3"]);
    expect(reads).toBe(2);
  });

  it("a pass that raced an edge change does not store the set it read before the change", async () => {
    const sets = createFollowerSets(env.redis, follows);
    edges.set("user:b", ["timeline:1"]);
    pause = 100;
    const racing = all(sets, "user:b");
    await sleep(20); // the racing pass has seen the old edges and waits to answer them
    edges.set("user:b", ["timeline:1", "timeline:2"]);
    await sets.invalidate(tenant, ["user:b"]);
    expect((await racing).feeds).toEqual(["timeline:1"]);
    pause = 0;
    reads = 0;
    expect((await all(sets, "user:b")).feeds).toEqual(["timeline:1", "timeline:2"]);
    expect(reads).toBe(1);
  });
});
