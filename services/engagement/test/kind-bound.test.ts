import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { createLocks, FeedsError, limits, type Lease } from "@feeds/kit";
import { ActivitySchema } from "@feeds/proto/feeds/feed/v1/feed";
import { createTestEnv } from "@feeds/kit/testing";
import { createCountedWrites } from "../src/counted-writes.js";
import { createKeyLocks } from "../src/key-locks.js";
import { createKindBound } from "../src/kind-bound.js";
import { createMarkRepository } from "../src/mark-repository.js";

// The per-activity bound of kinds against real locks on MongoDB-wire storage, with the activity's
// stored counts in memory: two "replicas" (two key-lock instances on one lock collection) admit
// first reactions of new kinds at once, each stored and counted after a while.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const BOUND = limits.reactionKindsPerActivity;

describe("kind bound", { timeout: 60_000 }, () => {
  const env = createTestEnv("engagement_kinds", { db: true });
  beforeAll(env.open);
  afterAll(env.close);

  it("concurrent first reactions of new kinds through two replicas stop at exactly the bound; counted kinds go straight through", async () => {
    const stored = new Map<string, number>(Array.from({ length: BOUND - 3 }, (_, i) => [`k${i}`, 1]));
    const live = async (_t: string, id: string) => create(ActivitySchema, { id, reactionCounts: Object.fromEntries([...stored].map(([k, n]) => [k, BigInt(n)])) });
    const locked: string[] = [];
    const replica = () =>
      createKindBound({
        activities: { live },
        counted: createCountedWrites({
          locks: createKeyLocks(createLocks(env.db, "engagement_locks")),
          marks: createMarkRepository(env.db),
          recounts: { reactions: async () => undefined, replies: async () => undefined },
        }),
        recounts: {
          async reactionKinds(_t: string, _a: string, kinds: string[], _records: string[], lease: Lease) {
            await lease.assertHeld();
            for (const k of kinds) stored.set(k, (stored.get(k) ?? 0) + 1);
          },
        },
      });
    const replicas = [replica(), replica()];
    const before = await live("t", "a1");
    const answers = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        replicas[i % 2]!.admit("t", before, `new${i}`, async (count) => {
          // Stored, then counted a while later: under the lock when the bound needs it.
          await sleep(Math.random() * 40);
          if (!count) throw new Error("a first reaction of a new kind is counted under the lock");
          locked.push(`new${i}`);
          await count(`record-${i}`);
          return i;
        }),
      ),
    );
    expect(answers.filter((a) => a.status === "fulfilled")).toHaveLength(3);
    for (const a of answers) {
      if (a.status === "rejected") expect((a.reason as FeedsError).fields.map((f) => f.path)).toEqual(["kind"]);
    }
    expect(stored.size).toBe(BOUND);
    expect(locked).toHaveLength(3);
    // A counted kind needs no slot and no lock; a new one past the bound is refused before any.
    const full = await live("t", "a1");
    expect(await replicas[0]!.admit("t", full, "k1", async (count) => count === undefined)).toBe(true);
    await expect(replicas[1]!.admit("t", full, "valueOf", async () => "stored")).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });
});
