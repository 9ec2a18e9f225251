import { randomUUID } from "node:crypto";
import type { Db } from "mongodb";
import { internal, isDuplicateKey } from "./errors.js";

interface LockDoc {
  _id: string;
  holder: string;
  until: Date;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Mutual exclusion through MongoDB-wire storage. Acquiring inserts a document with the lock's
 * key as `_id`: a unique insert is atomic on MongoDB and on FerretDB v1, whose conditional
 * updates are not (it filters in its own process, so two racing `updateOne`s can both match).
 * A lease whose holder died is taken over once it has expired.
 */
export function createLocks(db: Db, collection = "locks") {
  const locks = db.collection<LockDoc>(collection);
  return {
    async withLock<T>(key: string, fn: () => Promise<T>, opts: { leaseMs?: number; waitMs?: number } = {}): Promise<T> {
      const leaseMs = opts.leaseMs ?? 10_000;
      const deadline = Date.now() + (opts.waitMs ?? 8_000);
      const holder = randomUUID();
      for (;;) {
        try {
          await locks.insertOne({ _id: key, holder, until: new Date(Date.now() + leaseMs) });
          break;
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
      try {
        return await fn();
      } finally {
        await locks.deleteOne({ _id: key, holder });
      }
    },
  };
}

export type Locks = ReturnType<typeof createLocks>;
