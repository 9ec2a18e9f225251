import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, type RedisConn } from "@feeds/kit";
import { createFollowerSets, SMALL_SET } from "../src/follower-sets.js";

// The fan-out's follower-set cache on real Redis, in a namespace of its own; the edges are a map
// here and every MongoDB read of them is counted.

const redisUrl = process.env.FEEDS_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const namespace = `graph_followers_${randomBytes(4).toString("hex")}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("follower sets", () => {
  let redis: RedisConn;
  const edges = new Map<string, string[]>();
  let reads = 0;
  let pause = 0;
  const follows = {
    async followerFeedsUpTo(_t: string, feed: string, max: number) {
      reads++;
      const seen = [...(edges.get(feed) ?? [])].slice(0, max);
      if (pause) await sleep(pause);
      return seen;
    },
  };
  const tenant = "t1";

  beforeAll(async () => {
    redis = await connectRedis({ REDIS_URL: redisUrl, FEEDS_NAMESPACE: namespace });
  });
  afterAll(async () => {
    const keys = await redis.redis.keys(`${namespace}:*`);
    if (keys.length) await redis.redis.del(...keys);
    await redis.close();
  });

  it("a small set is read from the edges once, then from Redis, and again after each invalidation", async () => {
    const sets = createFollowerSets(redis, follows);
    edges.set("user:a", ["timeline:1", "timeline:2"]);
    reads = 0;
    expect(await sets.small(tenant, "user:a")).toEqual(["timeline:1", "timeline:2"]);
    expect(await sets.small(tenant, "user:a")).toEqual(["timeline:1", "timeline:2"]);
    expect(reads).toBe(1);
    edges.set("user:a", ["timeline:1", "timeline:2", "timeline:3"]);
    await sets.invalidate(tenant, ["timeline:3", "user:a"]);
    expect(await sets.small(tenant, "user:a")).toEqual(["timeline:1", "timeline:2", "timeline:3"]);
    expect(reads).toBe(2);
    // No followers is a set too.
    expect(await sets.small(tenant, "user:nobody")).toEqual([]);
    expect(await sets.small(tenant, "user:nobody")).toEqual([]);
    expect(reads).toBe(3);
  });

  it("a set over SMALL_SET answers null (stream it), and that answer is cached too", async () => {
    const sets = createFollowerSets(redis, follows);
    edges.set("user:star", Array.from({ length: SMALL_SET + 1 }, (_, i) => `timeline:${i}`));
    reads = 0;
    expect(await sets.small(tenant, "user:star")).toBeNull();
    expect(await sets.small(tenant, "user:star")).toBeNull();
    expect(reads).toBe(1);
  });

  it("a read that raced an edge change does not store the set it read before the change", async () => {
    const sets = createFollowerSets(redis, follows);
    edges.set("user:b", ["timeline:1"]);
    pause = 100;
    const racing = sets.small(tenant, "user:b");
    await sleep(20); // the racing read has seen the old edges and waits to fill
    edges.set("user:b", ["timeline:1", "timeline:2"]);
    await sets.invalidate(tenant, ["user:b"]);
    expect(await racing).toEqual(["timeline:1"]);
    pause = 0;
    expect(await sets.small(tenant, "user:b")).toEqual(["timeline:1", "timeline:2"]);
  });
});
