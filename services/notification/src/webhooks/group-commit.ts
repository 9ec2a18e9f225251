// Group commit: writes that arrive while earlier ones are being stored wait and go together, so a
// busy worker makes one storage round trip per batch instead of one per write, and an idle one
// waits for nothing (a write goes on the next turn of the event loop, with whatever else arrived
// in the same turn). Each write's promise settles with its own item's outcome once the batch
// holding it was stored: a task acknowledged after awaiting it is durable.

export interface GroupCommit<T, R> {
  write(item: T): Promise<R>;
}

export function createGroupCommit<T, R>(o: {
  /** Stores one batch; answers each item's outcome in order (a rejection fails the whole batch). */
  flush(items: T[]): Promise<PromiseSettledResult<R>[]>;
  maxBatch: number;
  /** Batches being stored at once. */
  concurrency: number;
}): GroupCommit<T, R> {
  interface Waiting {
    item: T;
    resolve(r: R): void;
    reject(e: unknown): void;
  }
  const queue: Waiting[] = [];
  let flushing = 0;
  let scheduled = false;

  async function flush(batch: Waiting[]) {
    try {
      const outcomes = await o.flush(batch.map((w) => w.item));
      batch.forEach((w, i) => {
        const outcome = outcomes[i];
        if (outcome?.status === "fulfilled") w.resolve(outcome.value);
        else w.reject(outcome ? outcome.reason : new Error("no outcome for a batched write"));
      });
    } catch (e) {
      for (const w of batch) w.reject(e);
    }
  }

  function drain() {
    scheduled = false;
    while (flushing < o.concurrency && queue.length > 0) {
      flushing++;
      void flush(queue.splice(0, o.maxBatch)).finally(() => {
        flushing--;
        drain();
      });
    }
  }

  return {
    write(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!scheduled && flushing < o.concurrency) {
          scheduled = true;
          setImmediate(drain);
        }
      });
    },
  };
}
