import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { internal, isDuplicateKey } from "./errors.js";

interface LockDoc {
  _id: string;
  holder: string;
  until: Date;
}

/** What `fn` gets while it holds a lock: how to know it still does. */
export interface Lease {
  /** Aborted (reason: an INTERNAL error) once this holder knows the lock is no longer its own. */
  readonly signal: AbortSignal;
  /** Reads storage: true while this holder's lease is the stored, unexpired one. The fence to check
   * right before a write that must not overlap the next holder's work. */
  stillHeld(): Promise<boolean>;
  /** Throws INTERNAL (retryable) unless `stillHeld()`. */
  assertHeld(): Promise<void>;
}

export interface LockOptions {
  /** How long a lease lasts without renewal; renewed every third of it while `fn` runs. */
  leaseMs?: number;
  /** How long to wait for a lock another holder has before failing with INTERNAL. */
  waitMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Mutual exclusion through MongoDB-wire storage. Acquiring inserts a document with the lock's
 * key as `_id` (a unique insert decides a race). Most of the system needs no lock: a conditional
 * single-document update answers the same question (docs/storage.md). This is for work that spans
 * several steps and services and must not interleave (graph's history tasks of one feed pair).
 * The lease is renewed while `fn` runs, so a slow holder keeps its lock; a lease whose holder
 * died (or stalled past it) is taken over once it has expired, and the stalled holder learns so
 * through its `Lease`.
 */
export function createLocks(db: Db, collection = "locks") {
  const locks = db.collection<LockDoc>(collection);

  /** Inserts our lease, taking over an expired one; answers when it runs out. */
  async function acquire(key: string, holder: string, leaseMs: number, waitMs: number): Promise<number> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const until = Date.now() + leaseMs;
      try {
        await locks.insertOne({ _id: key, holder, until: new Date(until) });
        return until;
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
      const current = await locks.findOne({ _id: key });
      if (current && current.until.getTime() < Date.now()) {
        await locks.deleteOne({ _id: key, holder: current.holder });
        continue;
      }
      if (Date.now() > deadline) throw internal(new Error(`lock ${key} not acquired`));
      await sleep(5 + Math.random() * 25);
    }
  }

  return {
    async withLock<T>(key: string, fn: (lease: Lease) => Promise<T>, opts: LockOptions = {}): Promise<T> {
      const leaseMs = opts.leaseMs ?? 10_000;
      const holder = randomUUID();
      const held = createHeldLease(locks, key, holder, leaseMs, await acquire(key, holder, leaseMs, opts.waitMs ?? 8_000));
      try {
        return await fn(held.lease);
      } finally {
        await held.release();
      }
    },
  };
}

/** Our lease while `fn` runs: renews it, watches for a takeover, and releases it once. */
function createHeldLease(locks: Collection<LockDoc>, key: string, holder: string, leaseMs: number, acquiredUntil: number) {
  const control = new AbortController();
  let until = acquiredUntil;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<unknown> = Promise.resolve();
  const lose = (why: string) => {
    if (!control.signal.aborted) control.abort(internal(new Error(`lock ${key} lost: ${why}`)));
  };

  /** Extends the lease; answers when to try next (null: lost). */
  async function renew(): Promise<number | null> {
    // A lease that ran out (a stalled process) may belong to another holder already: extending it
    // could overwrite theirs, so never try.
    if (Date.now() >= until - leaseMs / 6) {
      lose("the lease ran out before it could be renewed");
      return null;
    }
    const next = Date.now() + leaseMs;
    try {
      const r = await locks.updateOne({ _id: key, holder }, { $set: { until: new Date(next) } });
      if (r.matchedCount === 0) {
        lose("another holder took it over");
        return null;
      }
      until = next;
      // Next when two thirds of the lease are left, however long this write took.
      return until - Date.now() - (2 * leaseMs) / 3;
    } catch {
      // Storage unreachable: retry soon; the lease runs out if it stays so.
      return leaseMs / 6;
    }
  }

  function schedule(delayMs: number): void {
    timer = setTimeout(() => {
      renewing = renew().then((next) => {
        if (!stopped && next !== null) schedule(Math.max(0, next));
      });
    }, delayMs);
    timer.unref();
  }
  schedule(leaseMs / 3);

  async function stillHeld(): Promise<boolean> {
    if (control.signal.aborted || Date.now() >= until) return false;
    const doc = await locks.findOne({ _id: key });
    if (doc?.holder !== holder) {
      lose("another holder took it over");
      return false;
    }
    return doc.until.getTime() > Date.now();
  }

  const lease: Lease = {
    signal: control.signal,
    stillHeld,
    async assertHeld() {
      if (!(await stillHeld())) throw internal(new Error(`lock ${key} is no longer held`));
    },
  };

  return {
    lease,
    async release(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      // A renewal still in flight would write our lease back after the delete.
      await renewing;
      // A lost lease is someone else's now, or expires by itself.
      if (control.signal.aborted || Date.now() >= until) return;
      lose("released");
      // A failed release is not the caller's failure: the lease runs out by itself.
      await locks.deleteOne({ _id: key, holder }).catch(() => undefined);
    },
  };
}

export type Locks = ReturnType<typeof createLocks>;
