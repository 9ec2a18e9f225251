import { MongoClient, type Collection } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInsertBatcher, isDuplicateKey } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The insert batcher against real MongoDB-wire storage (the local store here), in a database of its own
// dropped afterwards. Commands are counted by the driver's command monitoring.

interface Doc {
  _id: string;
  n: number;
}

describe("insert batcher", () => {
  /** Documents of each insert command started, in order. */
  const inserts: number[] = [];
  const env = createTestEnv("kit_batch", {
    db: {
      onCommand: (e) => {
        if (e.commandName === "insert") inserts.push((e.command.documents as unknown[]).length);
      },
    },
  });
  beforeAll(env.open);
  afterAll(env.close);

  const docs = (prefix: string, n: number): Doc[] => Array.from({ length: n }, (_, i) => ({ _id: `${prefix}${i}`, n: i }));
  async function fresh(name: string): Promise<Collection<Doc>> {
    const c = env.db.collection<Doc>(name);
    await c.insertOne({ _id: "warm", n: -1 }); // creates the collection outside the counted commands
    inserts.length = 0;
    return c;
  }

  it("inserts of one tick share one command; each caller learns its own duplicates", async () => {
    const coll = await fresh("one_tick");
    await coll.insertMany([{ _id: "a1", n: 0 }, { _id: "c0", n: 0 }]);
    inserts.length = 0;
    const b = createInsertBatcher(coll, { maxInFlight: 2 });
    const [a, bb, c] = await Promise.all([b.insert(docs("a", 3)), b.insert(docs("b", 2)), b.insert(docs("c", 2))]);
    expect(a).toEqual({ inserted: 2, duplicates: [1] });
    expect(bb).toEqual({ inserted: 2, duplicates: [] });
    expect(c).toEqual({ inserted: 1, duplicates: [0] });
    expect(inserts).toEqual([7]);
    expect(await coll.countDocuments({ _id: { $in: ["a0", "a1", "a2", "b0", "b1", "c0", "c1"] } })).toBe(7);
  });

  it("inserts arriving while maxInFlight commands are out leave together in the next one", async () => {
    const coll = await fresh("queued");
    // The first command is held out until the later inserts are queued: what the title needs,
    // whatever the store's speed (a fast round trip between ticks would otherwise end it early).
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    let calls = 0;
    const gated = Object.create(coll) as Collection<Doc>;
    gated.insertMany = (async (...args: Parameters<Collection<Doc>["insertMany"]>) => {
      if (calls++ === 0) await held;
      return coll.insertMany(...args);
    });
    const b = createInsertBatcher(gated, { maxInFlight: 1 });
    const first = b.insert(docs("x", 1));
    // Later ticks, while the first command is out.
    const later: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
      later.push(b.insert(docs(`y${i}-`, 2)));
    }
    expect(calls).toBe(1);
    release();
    await Promise.all([first, ...later]);
    expect(inserts).toEqual([1, 10]);
    expect(await coll.countDocuments({ _id: { $ne: "warm" } })).toBe(11);
  });

  it("a command carries at most maxDocs, and a caller with a batch of its own goes out directly", async () => {
    const coll = await fresh("capped");
    const b = createInsertBatcher(coll, { maxInFlight: 1, maxDocs: 8 });
    await Promise.all([b.insert(docs("p", 3)), b.insert(docs("q", 3)), b.insert(docs("r", 3)), b.insert(docs("big", 4))]);
    // The 4-document batch (half of maxDocs) went alone at once; the queue's 3 + 3, then 3.
    expect(inserts).toEqual([4, 6, 3]);
    expect(await coll.countDocuments({ _id: { $ne: "warm" } })).toBe(13);
  });

  it("a duplicate answers code 11000 through the caller's outcome, not as the batch's failure", async () => {
    const coll = await fresh("dups");
    const b = createInsertBatcher(coll);
    const all = await Promise.all([b.insert([{ _id: "warm", n: 1 }]), b.insert([{ _id: "new", n: 1 }])]);
    expect(all).toEqual([
      { inserted: 0, duplicates: [0] },
      { inserted: 1, duplicates: [] },
    ]);
    expect(isDuplicateKey({ code: 11000 })).toBe(true);
  });

  it("a command that fails as a whole fails every caller in it", async () => {
    const other = new MongoClient(env.config.MONGO_URL, { serverSelectionTimeoutMS: 1_000 });
    await other.connect();
    const coll = other.db(env.namespace).collection<Doc>("closed");
    await other.close();
    const b = createInsertBatcher(coll);
    const results = await Promise.allSettled([b.insert(docs("m", 1)), b.insert(docs("n", 1))]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  });
});
