/** One count update: the kinds to count on one activity, after the changes of these outbox records. */
export type CountRun = (tenantId: string, activityId: string, kinds: string[], records: string[]) => Promise<void>;

interface Batch {
  kinds: Set<string>;
  /** The outbox records of the changes (one each). */
  records: string[];
  waiters: { resolve: () => void; reject: (e: unknown) => void }[];
}

/**
 * Coalesces the count updates of each activity in this process. A change asks for its count once
 * it is stored; the changes that asked while a count was running all wait for the next one, which
 * starts after each of them was stored and so holds them all: one count under the lock serves a
 * whole queue of reactions on a hot activity, and moves the version once per change it claims
 * (`recounts.ts`).
 */
export function createCountBatcher(run: CountRun) {
  const queued = new Map<string, Batch>();
  const running = new Set<string>();

  async function drain(key: string, tenantId: string, activityId: string): Promise<void> {
    running.add(key);
    try {
      for (let batch = queued.get(key); batch; batch = queued.get(key)) {
        queued.delete(key);
        try {
          await run(tenantId, activityId, [...batch.kinds], batch.records);
          for (const w of batch.waiters) w.resolve();
        } catch (e) {
          for (const w of batch.waiters) w.reject(e);
        }
      }
    } finally {
      running.delete(key);
    }
  }

  return {
    /**
     * Resolves once a count that began after this call (so holds the caller's change, recorded
     * by outbox record `record`) is stored.
     */
    count(tenantId: string, activityId: string, kind: string, record: string): Promise<void> {
      const key = `${tenantId}/${activityId}`;
      const batch = queued.get(key) ?? { kinds: new Set<string>(), records: [], waiters: [] };
      queued.set(key, batch);
      batch.kinds.add(kind);
      batch.records.push(record);
      const done = new Promise<void>((resolve, reject) => batch.waiters.push({ resolve, reject }));
      if (!running.has(key)) void drain(key, tenantId, activityId);
      return done;
    },
  };
}

export type CountBatcher = ReturnType<typeof createCountBatcher>;
