import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnv } from "@feeds/kit/testing";
import { createNotificationSignal } from "../src/notifications/signal.js";
import { COUNTS_MAX_AGE_MS, INTENT_MS } from "../src/notifications/signal-scripts.js";
import type { Counts } from "../src/notifications/notification-repository.js";

// The notification signal's races against real Redis, with MongoDB's counts played by
// functions the test holds back: a count taken before a change must never be the one that stays.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const noDatabase = async (): Promise<Counts> => {
  throw new Error("the signal asked the database");
};

/** A count that answers `c` once `release()` is called. */
function heldCount(c: Counts) {
  let release = () => undefined as void;
  const gate = new Promise<void>((r) => (release = r));
  return { count: async () => (await gate, c), release: () => release() };
}

describe("the notification signal", () => {
  const env = createTestEnv("notify_signal", { redis: true });
  const { log } = env;
  beforeAll(env.open);
  afterAll(env.close);

  it("a reader's rebuild counted before a change does not overwrite the change's counts", async () => {
    const signal = createNotificationSignal({ redis: env.redis, log });
    const stale = heldCount({ unseen: 0, unread: 0 });
    const reading = signal.read("t", "a", stale.count);
    await sleep(50);
    await signal.changeAndCount("t", "a", async () => undefined, async () => ({ unseen: 1, unread: 1 }));
    stale.release();
    expect(await reading).toMatchObject({ unseen: 0, unread: 0 });
    expect(await signal.read("t", "a", noDatabase)).toMatchObject({ unseen: 1, unread: 1 });
  });

  it("a writer whose count comes late does not overwrite a later writer's counts", async () => {
    const signal = createNotificationSignal({ redis: env.redis, log });
    const slow = heldCount({ unseen: 1, unread: 1 });
    const first = signal.changeAndCount("t", "b", async () => undefined, slow.count);
    await sleep(50);
    await signal.changeAndCount("t", "b", async () => undefined, async () => ({ unseen: 2, unread: 2 }));
    slow.release();
    await first;
    const s = await signal.read("t", "b", noDatabase);
    expect(s).toMatchObject({ unseen: 2, unread: 2 });
  });

  it("a burst of changes for one owner is recounted a few times, not once each, and ends with the last counts", async () => {
    const signal = createNotificationSignal({ redis: env.redis, log });
    await signal.read("t", "d", async () => ({ unseen: 0, unread: 0 }));
    let stored = 0;
    let counted = 0;
    const count = async (): Promise<Counts> => {
      counted++;
      const c = { unseen: stored, unread: stored };
      await sleep(20);
      return c;
    };
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await sleep(i * 3);
        await signal.change("t", "d", async () => void stored++);
        await signal.refresh("t", "d", count);
      }),
    );
    expect(counted).toBeLessThan(10);
    expect(await signal.read("t", "d", noDatabase)).toMatchObject({ unseen: 20, unread: 20 });
  });

  it("every change moves the version forward, a failed write too; reads in between keep it", async () => {
    const signal = createNotificationSignal({ redis: env.redis, log });
    const v0 = (await signal.read("t", "c", async () => ({ unseen: 0, unread: 0 }))).version;
    expect((await signal.read("t", "c", noDatabase)).version).toBe(v0);
    await signal.changeAndCount("t", "c", async () => undefined, async () => ({ unseen: 1, unread: 0 }));
    const v1 = (await signal.read("t", "c", noDatabase)).version;
    expect(v1).toBeGreaterThan(v0);
    await expect(
      signal.changeAndCount("t", "c", async () => Promise.reject(new Error("write failed halfway")), async () => ({ unseen: 1, unread: 0 })),
    ).rejects.toThrow("write failed halfway");
    // It may have landed in part: the counts are rebuilt, at a newer version.
    const after = await signal.read("t", "c", async () => ({ unseen: 5, unread: 5 }));
    expect(after.version).toBeGreaterThan(v1);
    expect(after).toMatchObject({ unseen: 5, unread: 5 });
  });

  it("the page's counts are those of now: while a change is in flight they come from the database, then from Redis again", async () => {
    const signal = createNotificationSignal({ redis: env.redis, log });
    let stored = 1;
    const database = async (): Promise<Counts> => ({ unseen: stored, unread: stored });
    expect(await signal.current("t", "e", database)).toEqual({ unseen: 1, unread: 1 });
    expect(await signal.current("t", "e", noDatabase)).toEqual({ unseen: 1, unread: 1 });
    // A change whose write has landed but which has not finished yet.
    let finishWrite = () => undefined as void;
    const writing = signal.change("t", "e", async () => {
      stored++;
      await new Promise<void>((r) => (finishWrite = r));
    });
    await sleep(50);
    expect(await signal.current("t", "e", database)).toEqual({ unseen: 2, unread: 2 });
    // The signal keeps the counts of its version until the change finishes and moves it.
    expect(await signal.read("t", "e", noDatabase)).toMatchObject({ unseen: 1, unread: 1 });
    finishWrite();
    await writing;
    expect(await signal.current("t", "e", database)).toEqual({ unseen: 2, unread: 2 });
    expect(await signal.current("t", "e", noDatabase)).toEqual({ unseen: 2, unread: 2 });
  });

  it("a Redis that fails leaves the page's counts to the database", async () => {
    // The client as it is, but its signal script fails (as when Redis is down).
    const failing = Object.assign(Object.create(env.redis.redis) as Redis, { feedsNotifyPeek: () => Promise.reject(new Error("down")) });
    const signal = createNotificationSignal({ redis: { ...env.redis, redis: failing }, log });
    expect(await signal.current("t", "f", async () => ({ unseen: 3, unread: 4 }))).toEqual({ unseen: 3, unread: 4 });
  });

  it("counts filled before a dead writer's takeover are counted again after it; old counts are counted again", async () => {
    let now = Date.now();
    const signal = createNotificationSignal({ redis: env.redis, log, now: () => now });
    let stored = 0;
    const database = async (): Promise<Counts> => ({ unseen: stored, unread: stored });
    await signal.read("t", "g", database);
    // A writer that registered its intent, then stalled past its deadline (its write still to land).
    await env.redis.redis.zadd(env.redis.key("nsig-w", "t", "g"), now + INTENT_MS, "slow-writer");
    now += INTENT_MS + 1;
    expect(await signal.current("t", "g", database)).toEqual({ unseen: 0, unread: 0 }); // taken for dead, recounted
    stored++; // its write lands after the takeover's recount, and it never finishes
    now += 1000;
    expect(await signal.current("t", "g", noDatabase)).toEqual({ unseen: 0, unread: 0 });
    now += INTENT_MS;
    expect(await signal.current("t", "g", database)).toEqual({ unseen: 1, unread: 1 });
    expect(await signal.current("t", "g", noDatabase)).toEqual({ unseen: 1, unread: 1 });
    // Counts gone wrong some other way (here: doctored) are counted again once old.
    await env.redis.redis.hset(env.redis.key("nsig", "t", "g"), "unseen", "9");
    expect(await signal.current("t", "g", noDatabase)).toEqual({ unseen: 9, unread: 1 });
    now += COUNTS_MAX_AGE_MS + 1;
    expect(await signal.current("t", "g", database)).toEqual({ unseen: 1, unread: 1 });
  });
});
