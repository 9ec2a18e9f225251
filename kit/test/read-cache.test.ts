import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, createReadCache, dateFieldsCodec } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The read cache against the real Redis (FEEDS_TEST_REDIS_URL, default the local one), in a
// namespace of its own that is deleted afterwards.

const codec = { encode: (v: string) => v, decode: (v: unknown) => v as string };

describe("read cache", () => {
  const env = createTestEnv("kit_rc", { redis: true });
  beforeAll(env.open);
  afterAll(env.close);

  /** A store whose loads are counted, and can be paused between reading and answering. */
  function store(initial: Record<string, string>) {
    const data = new Map(Object.entries(initial));
    const loads: string[][] = [];
    let gate: Promise<void> | undefined;
    return {
      data,
      loads,
      pause() {
        let release = () => undefined as void;
        gate = new Promise<void>((r) => (release = r));
        return () => {
          gate = undefined;
          release();
        };
      },
      load: async (ids: string[]) => {
        loads.push(ids);
        const snapshot = new Map(ids.flatMap((id) => (data.has(id) ? [[id, data.get(id) as string] as const] : [])));
        if (gate) await gate;
        return snapshot;
      },
    };
  }

  it("loads misses once, then answers from Redis; absent ids are cached as absent", async () => {
    const cache = createReadCache(env.redis, "t1", codec, { ttlSeconds: 60 });
    const s = store({ a: "A", b: "B" });
    expect(await cache.read("ten", ["a", "b", "x", "a"], s.load)).toEqual(new Map([["a", "A"], ["b", "B"]]));
    expect(await cache.read("ten", ["a", "b", "x"], s.load)).toEqual(new Map([["a", "A"], ["b", "B"]]));
    expect(s.loads).toEqual([["a", "b", "x"]]);
    // Tenants never share entries.
    expect(await cache.read("other", ["a"], s.load)).toEqual(new Map([["a", "A"]]));
    expect(s.loads).toHaveLength(2);
  });

  it("a warm read of several ids, and a warm lookup, is one Redis command each (values and generations in one MGET)", async () => {
    const sent: string[] = [];
    const counted = new Proxy(env.redis.redis, {
      get(t, k): unknown {
        const v = Reflect.get(t, k) as unknown;
        return typeof v === "function" && typeof k === "string" ? (...args: unknown[]) => (sent.push(k), (v as (...a: unknown[]) => unknown).apply(t, args)) : v;
      },
    });
    const cache = createReadCache({ ...env.redis, redis: counted }, "t7", codec, { ttlSeconds: 60 });
    const s = store({ a: "A", b: "B", c: "C" });
    await cache.read("ten", ["a", "b", "c"], s.load);
    sent.length = 0;
    expect(await cache.read("ten", ["a", "b", "c"], s.load)).toEqual(new Map([["a", "A"], ["b", "B"], ["c", "C"]]));
    expect(await cache.lookup("ten", "b")).toEqual({ hit: true, value: "B" });
    expect(sent).toEqual(["mget", "mget"]);
  });

  it("a write's invalidation shows the new value on the next read", async () => {
    const cache = createReadCache(env.redis, "t2", codec, { ttlSeconds: 60 });
    const s = store({ a: "A1" });
    await cache.read("ten", ["a"], s.load);
    s.data.set("a", "A2");
    await cache.invalidate("ten", ["a"]);
    expect(await cache.read("ten", ["a"], s.load)).toEqual(new Map([["a", "A2"]]));
    s.data.delete("a");
    await cache.invalidate("ten", ["a"]);
    expect(await cache.read("ten", ["a"], s.load)).toEqual(new Map());
  });

  it("a reader that read the store before a write does not cache what it read", async () => {
    const cache = createReadCache(env.redis, "t3", codec, { ttlSeconds: 60 });
    const s = store({ a: "old" });
    const release = s.pause();
    const slowRead = cache.read("ten", ["a"], s.load); // reads "old", then waits
    await new Promise((r) => setTimeout(r, 20));
    s.data.set("a", "new");
    await cache.invalidate("ten", ["a"]);
    release();
    expect(await slowRead).toEqual(new Map([["a", "old"]]));
    // The slow reader's fill was refused: the next read goes to the store and sees the write.
    expect(await cache.read("ten", ["a"], s.load)).toEqual(new Map([["a", "new"]]));
    expect(s.loads).toHaveLength(2);
  });

  it("lookup: a miss's fill stores the value (or absence) unless a write came between lookup and fill", async () => {
    const cache = createReadCache(env.redis, "t5", codec, { ttlSeconds: 60 });
    const miss = await cache.lookup("ten", "a");
    expect(miss.hit).toBe(false);
    if (!miss.hit) await miss.fill("A");
    expect(await cache.lookup("ten", "a")).toEqual({ hit: true, value: "A" });
    const none = await cache.lookup("ten", "gone");
    if (!none.hit) await none.fill(undefined);
    expect(await cache.lookup("ten", "gone")).toEqual({ hit: true, value: undefined });
    // A write between the lookup and the fill: the fill is refused, the next lookup misses.
    const raced = await cache.lookup("ten", "b");
    await cache.invalidate("ten", ["b"]);
    if (!raced.hit) await raced.fill("stale");
    expect((await cache.lookup("ten", "b")).hit).toBe(false);
    // read() sees what lookup's fill stored, without loading.
    const s = store({});
    expect(await cache.read("ten", ["a", "gone"], s.load)).toEqual(new Map([["a", "A"]]));
    expect(s.loads).toEqual([]);
  });

  it("falls back to the store when Redis does not answer", async () => {
    const broken = await connectRedis(env.config);
    const cache = createReadCache(broken, "t4", codec, { ttlSeconds: 60 });
    broken.redis.disconnect();
    const s = store({ a: "A" });
    expect(await cache.read("ten", ["a"], s.load)).toEqual(new Map([["a", "A"]]));
    const miss = await cache.lookup("ten", "a");
    expect(miss.hit).toBe(false);
    if (!miss.hit) await miss.fill("A"); // does nothing, and does not throw
    await expect(cache.invalidate("ten", ["a"])).rejects.toThrow();
  });
});

describe("dateFieldsCodec", () => {
  it("stores the named Date fields as epoch ms and revives them; other fields pass through", () => {
    const codec = dateFieldsCodec<{ id: string; at: Date; n: number }>("at");
    const v = { id: "a", at: new Date("2024-01-02T03:04:05.678Z"), n: 1 };
    const stored = JSON.parse(JSON.stringify(codec.encode(v))) as unknown;
    expect(stored).toEqual({ id: "a", at: 1704164645678, n: 1 });
    expect(codec.decode(stored)).toEqual(v);
  });
});
