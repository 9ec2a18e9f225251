import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocks } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { createCountedWrites } from "../src/counted-writes.js";
import { createKeyLocks } from "../src/key-locks.js";
import { createMarkRepository, type MarkDoc } from "../src/mark-repository.js";

// Counted writes against real MongoDB-wire storage (locks and marks), with the counted records
// in memory and a count that takes a while between reading and storing: two "replicas" (two
// key-lock instances, each with its own in-process queue, on one lock collection) write at once.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("counted writes", { timeout: 60_000 }, () => {
  const env = createTestEnv("engagement_counted", { db: true });
  beforeAll(env.open);
  afterAll(env.close);

  it("the stored count equals the records after concurrent writes through two replicas; no mark is left", async () => {
    const marks = createMarkRepository(env.db);
    const replica = () =>
      createCountedWrites({
        locks: createKeyLocks(createLocks(env.db, "engagement_locks")),
        marks,
        recounts: { reactions: async () => undefined, replies: async () => undefined },
      });
    const replicas = [replica(), replica()];
    for (let round = 0; round < 4; round++) {
      const records: number[] = [];
      let stored = -1;
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          (replicas[i % 2] ?? replicas[0])!.locked("replies", "t", `parent-${round}`, {
            async write(dirty) {
              await dirty();
              records.push(i);
              return i;
            },
            async count() {
              const n = records.length;
              // A slow count: another writer's record may land between this read and this store.
              await sleep(Math.random() * 60);
              stored = n;
            },
          }),
        ),
      );
      expect(records).toHaveLength(30);
      expect(stored, `round ${round}`).toBe(30);
    }
    for (let i = 0; i < 50 && (await env.db.collection("engagement_marks").countDocuments()) > 0; i++) await sleep(50);
    expect(await env.db.collection("engagement_marks").countDocuments()).toBe(0);
  });

  it("a count that fails leaves a mark for the relay; a write that writes nothing leaves none", async () => {
    const marks = createMarkRepository(env.db);
    await env.db.collection("engagement_marks").deleteMany({});
    const counted = createCountedWrites({
      locks: createKeyLocks(createLocks(env.db, "engagement_locks")),
      marks,
      recounts: { reactions: async () => undefined, replies: async () => undefined },
    });
    await counted.locked("replies", "t", "quiet", { write: async () => 1, count: async () => Promise.reject(new Error("never called")) });
    await expect(
      counted.locked("replies", "t", "failing", {
        async write(dirty) {
          await dirty();
          return 1;
        },
        count: async () => Promise.reject(new Error("count failed")),
      }),
    ).rejects.toThrow("count failed");
    await sleep(100);
    const left = (await env.db.collection<MarkDoc>("engagement_marks").find({}).toArray()).map((m) => m.target);
    expect(left).toContain("failing");
    expect(left).not.toContain("quiet");
  });
});
