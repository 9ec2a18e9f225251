import type { Lease } from "@feeds/kit";
import type { KeyLocks } from "./key-locks.js";
import type { MarkKind, MarkRepository } from "./mark-repository.js";

/** One change of records that a stored count is made from. */
export interface CountedWrite<T> {
  /** The change; calls `dirty()` right before its first write (a change that writes nothing never does). */
  write(dirty: () => Promise<void>): Promise<T>;
  /** Stores the counts the write moved, counted from the records; runs only after `dirty()`. */
  count(result: T, lease: Lease): Promise<void>;
}

/** The change an outbox relay's repair is made for: its record, and whether it happened. */
export interface RepairedChange {
  record: string;
  happened: () => Promise<boolean>;
}

/** A full recount of one target from its records, run under the target's lock. */
export type Recount = (tenantId: string, target: string, lease: Lease, change?: RepairedChange) => Promise<void>;

const lockKey = (kind: MarkKind, tenantId: string, target: string) => `${kind}/${tenantId}/${target}`;

/**
 * Counts that equal their records under concurrency, on every replica, on FerretDB v1 (whose
 * racing `$inc`s lose updates): a count is made from the records and stored under the target's
 * lock, after the change it follows. Whatever a writer that died or failed between its change
 * and its count leaves behind is recounted by a relay: from a recount mark (`locked`, `mark`,
 * `recount-relay.ts`) or from the change's outbox record (`reaction-writes.ts`).
 */
export function createCountedWrites(deps: {
  locks: KeyLocks;
  marks: Pick<MarkRepository, "add" | "drop">;
  recounts: Record<MarkKind, Recount>;
}) {
  const { locks, marks, recounts } = deps;

  return {
    /** Runs `fn` under the target's lock (a count made from the records, stored by `fn`). */
    withLock<T>(kind: MarkKind, tenantId: string, target: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
      return locks.withKey(lockKey(kind, tenantId, target), fn);
    },

    /** Leaves a recount mark for the relay (after a count that failed). */
    mark: (kind: MarkKind, tenantId: string, target: string) => marks.add(tenantId, kind, target),

    /**
     * The write and its count both under the target's lock (e.g. no reply lands on a comment
     * being deleted), with a recount mark from the write's `dirty()` until the count is stored.
     */
    locked<T>(kind: MarkKind, tenantId: string, target: string, w: CountedWrite<T>): Promise<T> {
      return locks.withKey(lockKey(kind, tenantId, target), async (lease) => {
        let mark: string | null = null;
        try {
          const result = await w.write(async () => {
            await lease.assertHeld();
            mark ??= await marks.add(tenantId, kind, target);
          });
          if (mark === null) return result;
          await w.count(result, lease);
          // Not waited for: a mark that stays only costs the relay one recount.
          void marks.drop([mark]).catch(() => undefined);
          return result;
        } catch (e) {
          // The relay may have taken our mark already (this call stalled past its lease and the
          // relay's age): a fresh one makes sure the count is made again after our write.
          if (mark !== null) await marks.add(tenantId, kind, target).catch(() => undefined);
          throw e;
        }
      });
    },

    /** The relay's repair: a full recount of `target` under its lock (for `change`, if named). */
    repair(kind: MarkKind, tenantId: string, target: string, change?: RepairedChange): Promise<void> {
      return locks.withKey(lockKey(kind, tenantId, target), (lease) => recounts[kind](tenantId, target, lease, change));
    },
  };
}

export type CountedWrites = ReturnType<typeof createCountedWrites>;
