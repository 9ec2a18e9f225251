import type { Collection, Db } from "mongodb";
import { conflict, createLocks, createReadCache, type RedisConn, type Sealed } from "@feeds/kit";
import type { SecretBox } from "./secret-box.js";

// Webhook destinations. The signing secret is stored sealed (secret-box.ts): the delivery worker
// opens it to sign, and it is never answered again after registration (no list, view or log shows it).

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

const LOCAL_MAX_AGE_MS = 60_000;
const LOCAL_MAX_ENTRIES = 10_000;

/** The plaintext signing secret of a stored destination, sealed or (an older record) not. */
const secretOfWith = (box: SecretBox) => (d: DestinationDoc): string => {
  if (d.sealed_secret) return box.open(d, d.sealed_secret);
  if (d.secret !== undefined) return d.secret;
  throw new Error(`webhook destination ${d._id} has no signing secret`);
};

const routeCodec = { encode: (v: Route[]) => v, decode: (v: unknown) => v as Route[] };

export function createDestinationRepository(db: Db, redis: RedisConn, box: SecretBox) {
  const destinations: Collection<DestinationDoc> = db.collection<DestinationDoc>("webhook_destinations");
  const locks = createLocks(db, "webhook_locks");
  const secretOf = secretOfWith(box);
  // Every event of every tenant asks for its tenant's routes: Redis answers, MongoDB on a miss.
  const routes = createReadCache(redis, "whroutes", routeCodec, { ttlSeconds: 300 });
  const ALL = "all";
  // The delivery worker's destinations, kept in this process and trusted while the tenant's
  // destination generation in Redis is the one they were read under (every create and delete
  // moves it) and they are younger than LOCAL_MAX_AGE_MS (a writer that died before moving it).
  const generation = (tenantId: string) => redis.key("whdestgen", tenantId);
  const local = new Map<string, { target: DeliveryTarget | null; gen: string; at: number }>();
  const changed = async (tenantId: string) => {
    await redis.redis.incr(generation(tenantId));
    await routes.invalidate(tenantId, [ALL]);
  };

  return {
    async ensureIndexes() {
      await destinations.createIndex({ tenant_id: 1, created_at: 1, _id: 1 });
    },

    /** Inserts a destination, its secret sealed, unless the tenant has the most it may have (409). */
    async create(d: NewDestination): Promise<void> {
      const { secret, ...rest } = d;
      const doc: DestinationDoc = { ...rest, sealed_secret: box.seal(d, secret) };
      // Count and insert under one lock per tenant: two racing registrations cannot both pass.
      await locks.withLock(`destinations:${doc.tenant_id}`, async (lease) => {
        const n = await destinations.countDocuments({ tenant_id: doc.tenant_id });
        if (n >= MAX_DESTINATIONS) throw conflict(`a tenant has at most ${MAX_DESTINATIONS} webhook destinations`);
        await lease.assertHeld();
        await destinations.insertOne(doc);
      });
      await changed(doc.tenant_id);
    },

    /** Answers whether it existed. */
    async remove(tenantId: string, id: string): Promise<boolean> {
      const r = await destinations.deleteOne({ _id: id, tenant_id: tenantId });
      await changed(tenantId);
      return r.deletedCount > 0;
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
