import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocks, isCode } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The lease lock against real MongoDB-wire storage (FEEDS_TEST_MONGO_URL, default the local
// store), in a database of its own that is dropped afterwards.

interface LockRow {
  _id: string;
  holder: string;
  until: Date;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("lease lock", { timeout: 20_000 }, () => {
  const env = createTestEnv("kit_lock", { db: true });
  beforeAll(env.open);
  afterAll(env.close);

  const newKey = () => `k-${randomBytes(4).toString("hex")}`;

  it("keeps the lock for a holder that runs past its lease: a second holder waits for it", async () => {
    const locks = createLocks(env.db, "locks_renew");
    const key = newKey();
    const leaseMs = 1_000;
    const events: string[] = [];
    let entered!: () => void;
    const firstIn = new Promise<void>((r) => (entered = r));
    const first = locks.withLock(
      key,
      async () => {
        entered();
        events.push("first in");
        // Three leases long: without renewal the second holder would take over halfway.
        await sleep(3 * leaseMs);
        events.push("first out");
      },
      { leaseMs },
    );
    await firstIn;
    const second = locks.withLock(
      key,
      async () => {
        events.push("second in");
      },
      { leaseMs, waitMs: 10_000 },
    );
    await Promise.all([first, second]);
    expect(events).toEqual(["first in", "first out", "second in"]);
  });

  it("tells a holder whose lease expired and was taken over that it lost the lock", async () => {
    const locks = createLocks(env.db, "locks_fence");
    const key = newKey();
    const leaseMs = 3_000;
    let secondIn!: () => void;
    const secondHolds = new Promise<void>((r) => (secondIn = r));
    let releaseSecond!: () => void;
    const secondMayLeave = new Promise<void>((r) => (releaseSecond = r));
    let second: Promise<void> | undefined;
    const seen = await locks.withLock(
      key,
      async (lease) => {
        const before = await lease.stillHeld();
        // A stalled process: its lease runs out in storage before it could renew, and the next
        // holder takes over.
        await env.db.collection<LockRow>("locks_fence").updateOne({ _id: key }, { $set: { until: new Date(Date.now() - 1) } });
        second = locks.withLock(
          key,
          async () => {
            secondIn();
            await secondMayLeave;
          },
          { leaseMs, waitMs: 5_000 },
        );
        await secondHolds;
        const after = await lease.stillHeld();
        let fenced = "";
        try {
          await lease.assertHeld();
          fenced = "passed";
        } catch (e) {
          fenced = isCode(e, "INTERNAL") ? "INTERNAL" : String(e);
        }
        return { before, after, fenced, aborted: lease.signal.aborted };
      },
      { leaseMs },
    );
    expect(seen).toEqual({ before: true, after: false, fenced: "INTERNAL", aborted: true });
    // The first holder's release leaves the second holder's lock alone.
    const stored = await env.db.collection<LockRow>("locks_fence").findOne({ _id: key });
    expect(stored).not.toBeNull();
    const third = await Promise.race([
      locks.withLock(key, async () => "third", { leaseMs, waitMs: 300 }).catch((e: unknown) => (isCode(e, "INTERNAL") ? "refused" : String(e))),
      sleep(2_000).then(() => "timeout"),
    ]);
    expect(third).toBe("refused");
    releaseSecond();
    await second;
  });

  it("releases once: nothing is left behind, and a later holder gets it at once", async () => {
    const locks = createLocks(env.db, "locks_release");
    const key = newKey();
    const leaseMs = 1_000;
    await locks.withLock(key, () => sleep(leaseMs), { leaseMs });
    // A renewal in flight at release time must not write the lease back afterwards.
    await sleep(leaseMs);
    expect(await env.db.collection<LockRow>("locks_release").countDocuments({ _id: key })).toBe(0);
    const started = Date.now();
    await locks.withLock(key, async () => undefined, { leaseMs, waitMs: 100 });
    expect(Date.now() - started).toBeLessThan(leaseMs);
  });
});
