import type { Collection, Db } from "mongodb";
import { APPLIED_FIELD, isDuplicateKey, redisScript, type Logger, type OutboxFields, type OutboxTarget, type PendingChange, type RedisConn } from "@feeds/kit";

// Each owner's unseen and unread counts live in one document, moved by increments, never
// recounted: a notification's insert carries its pending change (+1 unseen, +1 unread) and the
// counts take it once (the change id joins `applied` in the same atomic update, so a replay by the
// outbox relay or a redelivered event matches nothing). A mark records its pending change in the
// counts document first, stamps the notifications it sets (`seen_by`/`read_by`: the change id),
// then takes minus what it set; a relay finishing a mark whose writer died counts the stamps. `v`
// moves with every change: the owner's change signal.
//
// The signal is answered from Redis alone: each update of the document copies `{v, unseen,
// unread}` to a hash per owner, kept only when its `v` is newer than the one there (updates may
// finish out of order); a missing hash is read from the document once and copied. A copy that
// failed (Redis down) leaves the hash a version behind until the next change, or until it
// expires (COPY_TTL_SECONDS) and is read again.

export const COUNTS = "notification_counts";

export interface Counts {
  unseen: number;
  unread: number;
}

export interface CountsDoc extends OutboxFields {
  /** `tenant/owner` (neither part holds a `/`: ids). */
  _id: string;
  tenant_id: string;
  owner: string;
  unseen: number;
  unread: number;
  /** Moves with every change of the owner's notifications (the change signal's version). */
  v: number;
  /** Change ids whose increments this document holds (kit's outbox clears them). */
  applied?: string[];
}

export const countsKey = (tenantId: string, owner: string) => `${tenantId}/${owner}`;
export const countsTarget = (tenantId: string, owner: string): OutboxTarget => ({ collection: COUNTS, id: countsKey(tenantId, owner) });

/** What a change does to the counts (`PendingChange.data`): +1/+1 for a new notification, minus what a mark set. */
export interface CountsDelta {
  unseen: number;
  unread: number;
}

interface Queued {
  changeId: string;
  delta: CountsDelta;
  resolve(c: Counts & { version: number }): void;
  reject(e: unknown): void;
}

/** Changes of one owner taken by one update at most. */
const BATCH_MAX = 200;
/** How long an owner's copy in Redis lives without a change (then read from the document again). */
export const COPY_TTL_SECONDS = 300;
/** Stores {v, unseen, unread} when `v` is newer than the stored one (or none is stored). */
const COPY = `
local v = redis.call('HGET', KEYS[1], 'v')
if v and tonumber(v) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'unseen', ARGV[2], 'unread', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
`;

export function createCountsRepository(db: Db, redis: RedisConn, log: Logger) {
  const counts: Collection<CountsDoc> = db.collection<CountsDoc>(COUNTS);
  const copyScript = redisScript(redis.redis, COPY);
  const copyKey = (tenantId: string, owner: string) => redis.tenantKey(tenantId, "ncounts", owner);
  /** The document's counts to Redis (best effort: a failure leaves the copy a version behind). */
  async function copy(tenantId: string, owner: string, c: Counts & { version: number }): Promise<void> {
    await copyScript(1, copyKey(tenantId, owner), String(c.version), String(c.unseen), String(c.unread), String(COPY_TTL_SECONDS)).catch((err: unknown) =>
      log.debug({ err: String(err), owner }, "notification counts not copied to Redis"),
    );
  }
  /** Per owner (`tenant/owner`): the changes waiting while an update of the document is out. */
  const queues = new Map<string, Queued[]>();
  const of = (d: Pick<CountsDoc, "unseen" | "unread"> | null): Counts => ({ unseen: Math.max(0, d?.unseen ?? 0), unread: Math.max(0, d?.unread ?? 0) });

  /** One update taking `items` (each change once); null when one of them was applied before. */
  async function applyAll(tenantId: string, owner: string, _id: string, items: Queued[]): Promise<CountsDoc | null> {
    const ids = items.map((i) => i.changeId);
    const inc = { unseen: 0, unread: 0, v: 1 };
    for (const i of items) {
      inc.unseen += i.delta.unseen;
      inc.unread += i.delta.unread;
    }
    try {
      return await counts.findOneAndUpdate(
        { _id, tenant_id: tenantId, [APPLIED_FIELD]: { $nin: ids } },
        { $inc: inc, $setOnInsert: { owner }, $push: { [APPLIED_FIELD]: { $each: ids } } },
        { upsert: true, returnDocument: "after" },
      );
    } catch (e) {
      // The document exists and holds one of the changes already: the upsert's insert collided.
      if (!isDuplicateKey(e)) throw e;
      return null;
    }
  }

  /** Sends the owner's queued changes, a batch per update, until none is left. */
  async function drain(tenantId: string, owner: string, key: string): Promise<void> {
    for (;;) {
      const q = queues.get(key) ?? [];
      if (q.length === 0) {
        queues.delete(key);
        return;
      }
      const batch = q.splice(0, BATCH_MAX);
      try {
        let after = await applyAll(tenantId, owner, key, batch);
        // A replay among them: each alone, once (a batch that matched nothing changed nothing).
        if (after === null && batch.length > 1) for (const i of batch) after = (await applyAll(tenantId, owner, key, [i])) ?? after;
        after ??= await counts.findOne({ _id: key, tenant_id: tenantId });
        const answer = { ...of(after), version: after?.v ?? 0 };
        await copy(tenantId, owner, answer);
        for (const i of batch) i.resolve(answer);
      } catch (e) {
        for (const i of batch) i.reject(e);
      }
    }
  }

  async function get(tenantId: string, owner: string): Promise<Counts & { version: number; applied: string[] }> {
    const d = await counts.findOne({ _id: countsKey(tenantId, owner), tenant_id: tenantId });
    return { ...of(d), version: d?.v ?? 0, applied: d?.applied ?? [] };
  }

  return {
    /**
     * The owner's counts and version from Redis alone (the change signal); a missing copy is read
     * from the document once and copied.
     */
    async read(tenantId: string, owner: string): Promise<Counts & { version: number }> {
      const [v, unseen, unread] = await redis.redis.hmget(copyKey(tenantId, owner), "v", "unseen", "unread");
      if (v !== null && unseen !== null && unread !== null) return { version: Number(v), ...of({ unseen: Number(unseen), unread: Number(unread) }) };
      const { applied: _applied, ...c } = await get(tenantId, owner);
      await copy(tenantId, owner, c);
      return c;
    },

    /** The owner's counts and version from the document (zeros, version 0, for an owner with no notification yet). */
    get,

    /**
     * Applies `delta` for change `changeId` once; answers the counts after (also when the change
     * was applied before: then as they are). Changes of one owner arriving while one of its
     * updates is out go together in the next (a busy owner's document takes one update per round
     * trip, not one per notification).
     */
    apply(tenantId: string, owner: string, changeId: string, delta: CountsDelta): Promise<Counts & { version: number }> {
      const key = countsKey(tenantId, owner);
      return new Promise((resolve, reject) => {
        const q = queues.get(key);
        const item = { changeId, delta, resolve, reject };
        if (q) {
          q.push(item);
          return;
        }
        queues.set(key, [item]);
        void drain(tenantId, owner, key);
      });
    },
    /** Records a mark's pending change on the owner's counts document (created if missing). */
    async recordMark(tenantId: string, owner: string, change: PendingChange): Promise<void> {
      await counts.updateOne(
        { _id: countsKey(tenantId, owner), tenant_id: tenantId },
        { $push: { outbox: change }, $set: { outbox_pending: true }, $setOnInsert: { owner, unseen: 0, unread: 0, v: 0 } },
        { upsert: true },
      );
    },
  };
}

export type CountsRepository = ReturnType<typeof createCountsRepository>;
