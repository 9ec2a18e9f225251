import type { Locks } from "@feeds/kit";

/** A feed lock's lease; the holder stops writing once half of it is gone (see `held`). */
export const FEED_LOCK_LEASE_MS = 10_000;
/** How long one call may wait for all its locks, and for each further lock while it holds one. */
const WAIT_MS = 20_000;
const NESTED_WAIT_MS = 250;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs each call after every earlier call with the same key has settled (in this process). */
function keyedMutex() {
  const tails = new Map<string, Promise<void>>();
  return <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const run = (tails.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
}

/**
 * The count locks of feeds, shared by every replica (`kit/src/lock.ts`), taken in one sorted
 * order, so no two calls wait for each other in a circle. A call first queues behind this
 * process's calls on the same feeds, then waits for its first shared lock holding nothing, and
 * for each further one only briefly: if that one is busy (another replica) it lets its locks go
 * and starts over, so that no lease runs out while its holder waits.
 */
export function createFeedLocks(locks: Pick<Locks, "withLock">) {
  const local = keyedMutex();

  /**
   * Runs `fn` once, holding the locks of every one of `feeds`. `held()` is true while the oldest
   * lock has more than half its lease left: a write that finds it false must not count anything.
   */
  async function withFeeds<T>(tenantId: string, feeds: readonly string[], fn: (held: () => boolean) => Promise<T>): Promise<T> {
    const keys = [...new Set(feeds)].sort().map((f) => `count/${tenantId}/${f}`);
    let deadline = 0;
    let since = Date.now();
    const held = () => Date.now() - since < FEED_LOCK_LEASE_MS / 2;
    let started = false;
    const enter = (i: number): Promise<T> => {
      const key = keys[i];
      if (key === undefined) {
        // Taking the locks took too long: let them go and start over rather than write late.
        if (!held()) throw new Error("feed locks taken too slowly");
        started = true;
        return fn(held);
      }
      const inner = () => {
        if (i === 0) since = Date.now();
        return enter(i + 1);
      };
      const waitMs = i === 0 ? Math.max(0, deadline - Date.now()) : NESTED_WAIT_MS;
      return locks.withLock(key, inner, { leaseMs: FEED_LOCK_LEASE_MS, waitMs });
    };
    // This process's calls on the same feeds queue here first (no lease runs while they wait),
    // so that each feed's shared lock has one waiter per process.
    const inProcess = (i: number, then: () => Promise<T>): Promise<T> => {
      const key = keys[i];
      return key === undefined ? then() : local(key, () => inProcess(i + 1, then));
    };
    return inProcess(0, async () => {
      deadline = Date.now() + WAIT_MS;
      for (;;) {
        try {
          return await enter(0);
        } catch (e) {
          // Only a lock not had starts over; `fn` runs once at most.
          if (started || Date.now() > deadline) throw e;
          await sleep(5 + Math.random() * 45);
        }
      }
    });
  }

  return { withFeeds };
}

export type FeedLocks = ReturnType<typeof createFeedLocks>;
