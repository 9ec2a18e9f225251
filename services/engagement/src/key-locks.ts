import type { Lease, Locks } from "@feeds/kit";

/** A lock's lease (renewed while held); a holder checks it before every write that must not overlap. */
const LEASE_MS = 10_000;
/** How long a call waits for the shared lock once this process's earlier calls are done. */
const WAIT_MS = 20_000;

/**
 * Mutual exclusion per key across every replica (`kit/src/lock.ts`). This process's calls on a
 * key queue in memory first, so each key's shared lock has one waiter per process instead of one
 * polling waiter per request.
 */
export function createKeyLocks(locks: Pick<Locks, "withLock">) {
  const tails = new Map<string, Promise<void>>();
  return {
    withKey<T>(key: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
      const run = (tails.get(key) ?? Promise.resolve()).then(() => locks.withLock(key, fn, { leaseMs: LEASE_MS, waitMs: WAIT_MS }));
      const tail = run.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return run;
    },
  };
}

export type KeyLocks = ReturnType<typeof createKeyLocks>;
