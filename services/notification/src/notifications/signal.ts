import { randomUUID } from "node:crypto";
import type { Logger, RedisConn } from "@feeds/kit";
import type { Counts } from "./notification-repository.js";
import { BEGIN, FILL, FINISH, INTENT_MS, PEEK } from "./signal-scripts.js";

// Each owner's notification signal lives in Redis: a hash {v, unseen, unread}. The counts are
// exact without a database query per read. They are counted from the records, not kept by
// increments: a mark sets many notifications at once (all of them, or up to 100 ids), and an
// increment by what it changed would be lost by a crash between the write and the increment,
// with nothing to replay it from; a count from the records is right whatever happened before it.
// Across the two stores:
// - a change registers an intent (with a deadline), writes MongoDB, then `finish` moves the
//   version forward (max(v + 1, now ms), so a Redis that lost its data never repeats a version)
//   and drops the counts; the writer (or, coalesced, `refresh`) recounts from MongoDB and fills
//   them in at the version it read before counting;
// - a fill lands only while the version is the one it was counted at, so a count that may
//   predate a later change never overwrites that change's counts;
// - a reader that finds an intent past its deadline (its writer died between MongoDB and
//   `finish`) does what `finish` would have done; missing counts are recounted and filled;
// - the notification page wants the counts of now, not of the last finished change: while a
//   change is in flight (its write may have landed) it counts in MongoDB (`current`);
// - counts are counted again when older than COUNTS_MAX_AGE_MS, and once more after a reader
//   took an intent for dead (its writer may only have been slow: its write can land after the
//   takeover's recount), so no count that went wrong stays wrong for long.

type Script = (numKeys: number, ...args: string[]) => Promise<unknown>;

export interface SignalState extends Counts {
  version: number;
}

export function createNotificationSignal(deps: { redis: RedisConn; log: Logger; /** Epoch ms (tests move it). */ now?: () => number }) {
  const { redis: conn, log } = deps;
  const clock = deps.now ?? Date.now;
  const script = (name: string, lua: string): Script => {
    if (!(name in conn.redis)) conn.redis.defineCommand(name, { lua });
    return (conn.redis as unknown as Record<string, Script>)[name]!.bind(conn.redis);
  };
  const begin = script("feedsNotifyBegin", BEGIN);
  const finish = script("feedsNotifyFinish", FINISH);
  const peek = script("feedsNotifyPeek", PEEK);
  const fill = script("feedsNotifyFill", FILL);
  const keys = (tenantId: string, owner: string) => [conn.key("nsig", tenantId, owner), conn.key("nsig-w", tenantId, owner)] as const;

  /** Stores counts counted at `version` (their count started at `countedAt`, epoch ms). */
  async function fillAt(tenantId: string, owner: string, version: string, countedAt: number, c: Counts) {
    await fill(1, keys(tenantId, owner)[0], version, String(c.unseen), String(c.unread), String(countedAt));
  }

  /** {v, unseen, unread, changing}: '' for counts to rebuild, changing the changes in flight. */
  async function peekAt(tenantId: string, owner: string, now: number) {
    const [hash, intents] = keys(tenantId, owner);
    const [v, unseen, unread, changing] = (await peek(2, hash, intents, String(now))) as [string, string, string, string];
    return { v, counts: unseen !== "" && unread !== "" ? { unseen: Number(unseen), unread: Number(unread) } : null, changing: Number(changing) };
  }

  /**
   * Runs `write` (a change of the owner's notifications in MongoDB) with its intent recorded,
   * then moves the signal on (dropping its counts); answers the version it moved to. Fails
   * before writing when Redis is down; after the write, a Redis failure is left to the intent's
   * deadline (readers rebuild then): the version is null.
   */
  async function change<T>(tenantId: string, owner: string, write: () => Promise<T>): Promise<{ result: T; version: string | null }> {
    const [hash, intents] = keys(tenantId, owner);
    const id = randomUUID();
    await begin(1, intents, id, String(clock() + INTENT_MS), String(2 * INTENT_MS + 60_000));
    let version: string | null = null;
    let result: T;
    try {
      result = await write();
    } finally {
      // Also after a failed write: it may have landed in part.
      version = (await finish(2, hash, intents, id, String(clock())).catch((err: unknown) => {
        log.warn({ err: String(err), owner }, "notification signal left to its intent's deadline");
        return null;
      })) as string | null;
    }
    return { result, version };
  }

  // One recount at a time per owner in this process; changes that finish while it runs ask for
  // one more after it (a burst of notifications for one owner costs a couple of recounts, not one each).
  const refreshing = new Map<string, { again: boolean; done: Promise<void> }>();

  return {
    change,

    /** `change`, then the owner's counts as `count` reads them after the write, filled in at its version. */
    async changeAndCount<T>(tenantId: string, owner: string, write: () => Promise<T>, count: () => Promise<Counts>): Promise<{ result: T; counts: Counts }> {
      const { result, version } = await change(tenantId, owner, write);
      const countedAt = clock();
      const counts = await count();
      if (version !== null) await fillAt(tenantId, owner, version, countedAt, counts).catch(() => undefined);
      return { result, counts };
    },

    /**
     * Fills the owner's counts after a change (one that finished before this call): reads the
     * version, then counts; a change finishing meanwhile moves the version, so the fill is
     * refused and the recount runs again. Failures are left to readers, which rebuild.
     */
    refresh(tenantId: string, owner: string, count: () => Promise<Counts>): Promise<void> {
      const k = `${tenantId}/${owner}`;
      const running = refreshing.get(k);
      if (running) {
        running.again = true;
        return running.done;
      }
      const run = { again: false, done: Promise.resolve() };
      run.done = (async () => {
        try {
          do {
            run.again = false;
            const v = await conn.redis.hget(keys(tenantId, owner)[0], "v");
            if (v === null) return;
            const countedAt = clock();
            await fillAt(tenantId, owner, v, countedAt, await count());
          } while (run.again);
        } catch (err) {
          log.debug({ err: String(err), owner }, "notification counts left to the next reader");
        } finally {
          refreshing.delete(k);
        }
      })();
      refreshing.set(k, run);
      return run.done;
    },

    /**
     * The owner's signal from Redis: the counts of the last finished change (a change in flight
     * shows when it finishes, with its version); rebuilt from `count` only when Redis has none.
     */
    async read(tenantId: string, owner: string, count: () => Promise<Counts>): Promise<SignalState> {
      const now = clock();
      const { v, counts } = await peekAt(tenantId, owner, now);
      if (counts) return { version: Number(v), ...counts };
      const counted = await count();
      await fillAt(tenantId, owner, v, now, counted);
      return { version: Number(v), ...counted };
    },

    /**
     * The owner's counts as of now, for the notification page (call it after reading the page,
     * so that they count at least what the page shows): from Redis when no change is in flight,
     * else from `count`, as when Redis has none or fails.
     */
    async current(tenantId: string, owner: string, count: () => Promise<Counts>): Promise<Counts> {
      const now = clock();
      let peeked;
      try {
        peeked = await peekAt(tenantId, owner, now);
      } catch (err) {
        log.debug({ err: String(err), owner }, "notification counts from MongoDB: Redis failed");
        return count();
      }
      if (peeked.counts && peeked.changing === 0) return peeked.counts;
      const counted = await count();
      if (!peeked.counts && peeked.changing === 0) await fillAt(tenantId, owner, peeked.v, now, counted).catch(() => undefined);
      return counted;
    },
  };
}

export type NotificationSignal = ReturnType<typeof createNotificationSignal>;
