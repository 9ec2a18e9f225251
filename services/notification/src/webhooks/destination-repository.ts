import type { Collection, Db } from "mongodb";
import {
  conflict,
  createReadCache,
  isDuplicateKey,
  type Outbox,
  type OutboxFields,
  type PendingChange,
  type RedisConn,
  type Sealed,
} from "@feeds/kit";
import type { SecretBox } from "./secret-box.js";

// Webhook destinations. The signing secret is stored sealed (secret-box.ts): the delivery worker
// opens it to sign, and it is never answered again after registration (no list, view or log shows it).
//
// The cap (MAX_DESTINATIONS per tenant) lives on one document per tenant in
// `webhook_destination_counts`: `count`, its destinations plus registrations in flight. Every
// change of the count is a pending change of kit's outbox on that document, written in the update
// that changes the count, with its id in the document's `applied` list as the mark that the
// change still holds its delta. `revert` takes a delta back only while that mark is there and
// removes it in the same update, so a delta goes back at most once, and never after the change
// was seen through (its clear removes the mark). Then the destination is written:
// - a registration takes a slot (`$inc` conditioned on `count < MAX`), then inserts the
//   destination;
// - a removal gives its slot back (`$inc` -1), then turns the destination into a tombstone (tenant
//   "", `removed_by` the change; gone from every read at once, deleted by a TTL index later).
// A change its writer did not see through (it died, or stalls) is decided by the relay, for good:
// a registration whose destination landed keeps its slot; one that did not gets a tombstone under
// its id first (a stalled writer's insert then fails, never answered) and its slot back. A removal
// whose destination is still there completes it; one whose destination another removal took (or
// that never existed) gets its slot back.

export interface DestinationDoc {
  _id: string; // uuid
  tenant_id: string;
  url: string;
  /** Wanted event types; empty: every type. */
  events: string[];
  /** The signing secret, sealed. */
  sealed_secret?: Sealed;
  /** The signing secret in plaintext, as releases before sealing stored it (`sealPlaintext` seals it). */
  secret?: string;
  created_at: Date;
  /** Tombstones (tenant ""): when the TTL index deletes them. */
  expires_at?: Date;
  /** Tombstone of a removed destination: its tenant, and the change that removed it. */
  removed_from?: string;
  removed_by?: string;
}

/** A tenant's destinations and registrations in flight (the cap's document). */
interface CountDoc extends OutboxFields {
  _id: string; // tenant id
  count: number;
  /** Ids of the pending changes that still hold their delta of `count`. */
  applied?: string[];
}

/** What a pending change of the count is about. */
interface SlotChange {
  op: "add" | "remove";
  destination: string;
}

/** A destination to register, its signing secret in plaintext: the repository seals it. */
export type NewDestination = Omit<DestinationDoc, "sealed_secret" | "secret"> & { secret: string };

/** What one delivery needs of its destination. */
export interface DeliveryTarget {
  url: string;
  secret: string;
}

/** What the notify worker needs to route an event: no URL, no secret. */
export interface Route {
  id: string;
  events: string[];
}

/** Destinations per tenant: each event fans out to at most this many deliveries. */
export const MAX_DESTINATIONS = 20;

export const DESTINATIONS = "webhook_destinations";
export const DESTINATION_COUNTS = "webhook_destination_counts";
/** How long a tombstone keeps its id (far past any writer's stall and any relay's delay). */
const TOMBSTONE_MS = 86_400_000;

const LOCAL_MAX_AGE_MS = 60_000;
const LOCAL_MAX_ENTRIES = 10_000;

/** The plaintext signing secret of a stored destination, sealed or (an older record) not. */
const secretOfWith = (box: SecretBox) => (d: DestinationDoc): string => {
  if (d.sealed_secret) return box.open(d, d.sealed_secret);
  if (d.secret !== undefined) return d.secret;
  throw new Error(`webhook destination ${d._id} has no signing secret`);
};

const routeCodec = { encode: (v: Route[]) => v, decode: (v: unknown) => v as Route[] };

/**
 * Destinations of every tenant. `outbox` finishes the pending changes of the cap (this registers
 * both collections with it; the caller ensures its indexes and runs its relay).
 */
export function createDestinationRepository(db: Db, redis: RedisConn, box: SecretBox, outbox: Outbox) {
  const destinations: Collection<DestinationDoc> = db.collection<DestinationDoc>(DESTINATIONS);
  const counts: Collection<CountDoc> = db.collection<CountDoc>(DESTINATION_COUNTS);
  const secretOf = secretOfWith(box);
  // Every event of every tenant asks for its tenant's routes: Redis answers, MongoDB on a miss.
  const routes = createReadCache(redis, "whroutes", routeCodec, { ttlSeconds: 300 });
  const ALL = "all";
  // The delivery worker's destinations, kept in this process and trusted while the tenant's
  // destination generation in Redis is the one they were read under (every create and delete
  // moves it) and they are younger than LOCAL_MAX_AGE_MS (a writer that died before moving it).
  const generation = (tenantId: string) => redis.tenantKey(tenantId, "whdestgen");
  const local = new Map<string, { target: DeliveryTarget | null; gen: string; at: number }>();
  const changed = async (tenantId: string) => {
    await redis.redis.incr(generation(tenantId));
    await routes.invalidate(tenantId, [ALL]);
  };

  /** Tombstone fields: out of every tenant's reads, deleted by the TTL index later. */
  const tombstone = () => ({ tenant_id: "", expires_at: new Date(Date.now() + TOMBSTONE_MS) });

  /** A change of the tenant's count (its delta is written with it, see `recorded`). */
  function slotChange(tenantId: string, data: SlotChange): PendingChange {
    return outbox.change([], { targets: [{ collection: DESTINATION_COUNTS, id: tenantId }], data: { ...data } });
  }
  /** The operators that record `change` on the counter, with its mark, beside its `$inc`. */
  const recorded = (change: PendingChange) => ({ $push: { outbox: change, applied: change.id }, $set: { outbox_pending: true as const } });

  /** Takes a slot of the tenant's cap with `change` (a registration); answers false when full. */
  async function takeSlot(tenantId: string, change: PendingChange): Promise<boolean> {
    const take = () => counts.updateOne({ _id: tenantId, count: { $lt: MAX_DESTINATIONS } }, { $inc: { count: 1 }, ...recorded(change) });
    if ((await take()).matchedCount === 1) return true;
    // Full, or no counter yet: the tenant's first registration (its destinations from before
    // counters are counted once, here).
    const existing = await destinations.countDocuments({ tenant_id: tenantId });
    const room = existing < MAX_DESTINATIONS;
    try {
      await counts.insertOne(
        room ? { _id: tenantId, count: existing + 1, ...outbox.forInsert(change), applied: [change.id] } : { _id: tenantId, count: existing },
      );
      return room;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return (await take()).matchedCount === 1;
    }
  }

  /** Takes back the delta of `change` (+1 for a registration, -1 for a removal) while it still holds it. */
  const revert = (tenantId: string, change: PendingChange, delta: 1 | -1) =>
    counts.updateOne({ _id: tenantId, applied: change.id }, { $inc: { count: -delta }, $pull: { applied: change.id } });

  /** Whether destination `id` was inserted for the tenant (it may have been removed since). */
  async function landed(tenantId: string, id: string): Promise<boolean> {
    const d = await destinations.findOne({ _id: id }, { projection: { tenant_id: 1, removed_from: 1 } });
    return d !== null && (d.tenant_id === tenantId || d.removed_from === tenantId);
  }

  /** Decides registration `change` of destination `id` for good (see above). */
  async function decideAdd(tenantId: string, id: string, change: PendingChange): Promise<void> {
    if (await landed(tenantId, id)) return;
    try {
      await destinations.insertOne({ _id: id, url: "", events: [], created_at: new Date(), ...tombstone() });
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      if (await landed(tenantId, id)) return;
    }
    await revert(tenantId, change, 1);
  }

  /** Turns the tenant's destination `id` into the tombstone of removal `change`; answers whether it did. */
  async function bury(tenantId: string, id: string, change: PendingChange): Promise<boolean> {
    const r = await destinations.updateOne(
      { _id: id, tenant_id: tenantId },
      { $set: { ...tombstone(), removed_from: tenantId, removed_by: change.id }, $unset: { sealed_secret: "", secret: "" } },
    );
    return r.matchedCount === 1;
  }

  /** Decides removal `change` of destination `id` for good (see above). */
  async function decideRemove(tenantId: string, id: string, change: PendingChange): Promise<void> {
    if (await bury(tenantId, id, change)) return changed(tenantId);
    const d = await destinations.findOne({ _id: id }, { projection: { removed_by: 1 } });
    if (d?.removed_by !== change.id) await revert(tenantId, change, -1);
  }

  outbox.register(DESTINATION_COUNTS, async (doc, change) => {
    const { op, destination } = change.data as unknown as SlotChange;
    await (op === "add" ? decideAdd(doc._id, destination, change) : decideRemove(doc._id, destination, change));
  });

  return {
    async ensureIndexes() {
      await destinations.createIndex({ tenant_id: 1, created_at: 1, _id: 1 });
      await destinations.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    },

    /** Inserts a destination, its secret sealed, unless the tenant has the most it may have (409). */
    async create(d: NewDestination): Promise<void> {
      const { secret, ...rest } = d;
      const doc: DestinationDoc = { ...rest, sealed_secret: box.seal(d, secret) };
      const change = slotChange(doc.tenant_id, { op: "add", destination: doc._id });
      if (!(await takeSlot(doc.tenant_id, change))) throw conflict(`a tenant has at most ${MAX_DESTINATIONS} webhook destinations`);
      try {
        await destinations.insertOne(doc);
      } catch (e) {
        // Most likely not inserted: decided now (or, failing that, by the relay).
        await decideAdd(doc.tenant_id, doc._id, change).catch(() => undefined);
        throw e;
      }
      outbox.discard(DESTINATION_COUNTS, doc.tenant_id, change);
      await changed(doc.tenant_id);
    },

    /** Answers whether it existed. */
    async remove(tenantId: string, id: string): Promise<boolean> {
      const change = slotChange(tenantId, { op: "remove", destination: id });
      // No counter: nothing counted yet (destinations from before counters are counted when one is made).
      const counted = (await counts.updateOne({ _id: tenantId }, { $inc: { count: -1 }, ...recorded(change) })).matchedCount === 1;
      const buried = await bury(tenantId, id, change);
      if (counted) {
        if (!buried) await revert(tenantId, change, -1);
        outbox.discard(DESTINATION_COUNTS, tenantId, change);
      }
      if (buried) await changed(tenantId);
      return buried;
    },

    get: (tenantId: string, id: string) => destinations.findOne({ _id: id, tenant_id: tenantId }),

    /** A destination for its delivery: from this process while nothing changed, else MongoDB. */
    async forDelivery(tenantId: string, id: string): Promise<DeliveryTarget | null> {
      const gen = await redis.redis.get(generation(tenantId)).catch(() => null);
      const hit = local.get(id);
      if (gen !== null && hit && hit.gen === gen && Date.now() - hit.at < LOCAL_MAX_AGE_MS) return hit.target;
      const doc = await destinations.findOne({ _id: id, tenant_id: tenantId });
      const target = doc && { url: doc.url, secret: secretOf(doc) };
      if (gen !== null) {
        if (local.size >= LOCAL_MAX_ENTRIES) local.delete(local.keys().next().value ?? "");
        local.set(id, { target, gen, at: Date.now() });
      }
      return target;
    },

    /**
     * Seals every secret still stored in plaintext (records of releases before sealing, or of one
     * still running beside this one); answers how many it sealed. Stops between records once
     * `signal` is aborted.
     */
    async sealPlaintext(signal: AbortSignal, batch = 500): Promise<number> {
      let sealed = 0;
      while (!signal.aborted) {
        const rows = await destinations.find({ secret: { $exists: true } }).limit(batch).toArray();
        let moved = 0;
        for (const d of rows) {
          if (signal.aborted || d.secret === undefined) break;
          // Only while it still holds that plaintext: another process's sealing stays.
          const r = await destinations.updateOne(
            { _id: d._id, tenant_id: d.tenant_id, secret: d.secret },
            { $set: { sealed_secret: box.seal(d, d.secret) }, $unset: { secret: "" } },
          );
          moved += r.modifiedCount;
        }
        sealed += moved;
        if (rows.length < batch || moved === 0) break;
      }
      return sealed;
    },

    count: (tenantId: string) => destinations.countDocuments({ tenant_id: tenantId }),

    /** Oldest first, (created_at asc, id asc). */
    page(tenantId: string, limit: number, after: { created_at: Date; id: string } | null) {
      const filter = after
        ? { tenant_id: tenantId, $or: [{ created_at: { $gt: after.created_at } }, { created_at: after.created_at, _id: { $gt: after.id } }] }
        : { tenant_id: tenantId };
      return destinations.find(filter).sort({ created_at: 1, _id: 1 }).limit(limit + 1).toArray();
    },

    /** The tenant's routes (every destination's id and wanted types). */
    async routes(tenantId: string): Promise<Route[]> {
      const found = await routes.read(tenantId, [ALL], async () => {
        const rows = await destinations.find({ tenant_id: tenantId }, { projection: { _id: 1, events: 1 } }).toArray();
        return new Map([[ALL, rows.map((d) => ({ id: d._id, events: d.events }))]]);
      });
      return found.get(ALL) ?? [];
    },
  };
}

export type DestinationRepository = ReturnType<typeof createDestinationRepository>;
