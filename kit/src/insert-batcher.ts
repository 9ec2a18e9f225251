import { MongoBulkWriteError, type Collection, type Document, type OptionalUnlessRequiredId, type WriteError } from "mongodb";

// Group commit for hot inserts of small documents. A command's fixed cost (the round trip, the
// server's work per command) dwarfs a small document's: on the local storage, 2,000 feed entries
// went in at 1,799 docs/s as single-document inserts 10 at a time, at 11,921 docs/s as
// 10-document inserts 10 at a time (a probe with feed_entries' indexes, on this machine class).
// So small inserts do not each take a command of their own while many are out: up to `maxInFlight`
// commands go out at once, and inserts arriving meanwhile wait for the next free one and leave
// together, as one unordered insertMany. With nothing in flight an insert leaves at once (after
// the current tick, so that inserts of one tick share a command): no added wait when quiet.
//
// Each caller gets the outcome of its own documents: which already existed (duplicate key), and
// an error for a document that failed otherwise. A command that fails as a whole (connection
// lost, server down) fails every caller in it, as their own insert would have; what an
// unordered insert stored before failing stays stored, as it would have (callers' inserts are
// idempotent by `_id` or they read back, as before).
// A caller with a batch of its own (at least half of `maxDocs`) needs no company: it goes out
// directly, beside the queue, as it did before this existed.

export interface InsertOutcome {
  /** Documents of this caller stored by this insert. */
  inserted: number;
  /** Indices into this caller's documents whose `_id` (or another unique key) existed already. */
  duplicates: number[];
}

export interface InsertBatcher<T extends Document> {
  /** Inserts `docs` (unordered). Rejects when the command failed, or one of them failed for
   * another reason than a duplicate key (that document's error, with its code). */
  insert(docs: T[]): Promise<InsertOutcome>;
}

export interface InsertBatcherOptions {
  /**
   * Commands of the queue out at once (default 4). Few enough that concurrent writes share
   * commands, enough that a light write load never waits: with 2, bench 13's mixed load (10%
   * writes) kept 81–89% of its capacity at 150% offered load (writes queued behind each other held
   * the gateway's in-flight slots longer), 98–106% with 4, as without the batcher; bench 8's
   * write-only load was faster with 4 as well (0.28 of a bare insertOne route vs 0.23–0.25).
   */
  maxInFlight?: number;
  /** Documents per command at most (default 1000); one caller's documents are never split. */
  maxDocs?: number;
}

/** An error shaped like the server's for one document: `code` 11000 is a duplicate key. */
export class DocumentWriteError extends Error {
  constructor(
    message: string,
    readonly code: number | undefined,
  ) {
    super(message);
    this.name = "DocumentWriteError";
  }
}

interface Waiting<T> {
  docs: T[];
  resolve(o: InsertOutcome): void;
  reject(e: unknown): void;
}

export function createInsertBatcher<T extends Document>(coll: Collection<T>, opts: InsertBatcherOptions = {}): InsertBatcher<T> {
  const maxInFlight = opts.maxInFlight ?? 4;
  const maxDocs = opts.maxDocs ?? 1000;
  const queue: Waiting<T>[] = [];
  let inFlight = 0;
  let scheduled = false;

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      pump();
    });
  }

  function pump(): void {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch: Waiting<T>[] = [];
      let n = 0;
      while (queue.length > 0 && (batch.length === 0 || n + (queue[0] as Waiting<T>).docs.length <= maxDocs)) {
        const w = queue.shift() as Waiting<T>;
        batch.push(w);
        n += w.docs.length;
      }
      inFlight++;
      void send(batch).finally(() => {
        inFlight--;
        pump();
      });
    }
  }

  /** One unordered insertMany for `batch`; each caller settles with its own documents' outcome. */
  async function send(batch: Waiting<T>[]): Promise<void> {
    const docs = batch.length === 1 ? (batch[0] as Waiting<T>).docs : batch.flatMap((w) => w.docs);
    let errors: WriteError[] = [];
    try {
      await coll.insertMany(docs as OptionalUnlessRequiredId<T>[], { ordered: false });
    } catch (e) {
      const writeErrors = e instanceof MongoBulkWriteError ? ([] as WriteError[]).concat(e.writeErrors as WriteError | WriteError[]) : [];
      if (writeErrors.length === 0) {
        for (const w of batch) w.reject(e);
        return;
      }
      errors = writeErrors;
    }
    const byIndex = new Map(errors.map((w) => [w.index, w]));
    let offset = 0;
    for (const w of batch) {
      const duplicates: number[] = [];
      let failed: WriteError | undefined;
      if (byIndex.size > 0) {
        for (let i = 0; i < w.docs.length; i++) {
          const err = byIndex.get(offset + i);
          if (!err) continue;
          if (err.code === 11000) duplicates.push(i);
          else failed ??= err;
        }
      }
      offset += w.docs.length;
      if (failed) w.reject(new DocumentWriteError(failed.errmsg ?? `insert failed (code ${failed.code})`, failed.code));
      else w.resolve({ inserted: w.docs.length - duplicates.length, duplicates });
    }
  }

  return {
    insert(docs) {
      if (docs.length === 0) return Promise.resolve({ inserted: 0, duplicates: [] });
      return new Promise<InsertOutcome>((resolve, reject) => {
        const w: Waiting<T> = { docs, resolve, reject };
        if (docs.length * 2 >= maxDocs) {
          void send([w]);
          return;
        }
        queue.push(w);
        schedule();
      });
    },
  };
}
