import type { Collection, Db } from "mongodb";
import { conflict, createLocks, createReadCache, type RedisConn } from "@feeds/kit";

// Webhook destinations. The signing secret is stored as it is: the delivery worker must read it
// to sign, and it is never answered again after registration (no list, view or log shows it).

export interface DestinationDoc {
  _id: string; // uuid
  tenant_id: string;
  url: string;
  /** Wanted event types; empty: every type. */
  events: string[];
  secret: string;
  created_at: Date;
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

const routeCodec = { encode: (v: Route[]) => v, decode: (v: unknown) => v as Route[] };

export function createDestinationRepository(db: Db, redis: RedisConn) {
  const destinations: Collection<DestinationDoc> = db.collection<DestinationDoc>("webhook_destinations");
  const locks = createLocks(db, "webhook_locks");
  // Every event of every tenant asks for its tenant's routes: Redis answers, MongoDB on a miss.
  const routes = createReadCache(redis, "whroutes", routeCodec, { ttlSeconds: 300 });
  const ALL = "all";
  // The delivery worker's destinations, kept in this process and trusted while the tenant's
  // destination generation in Redis is the one they were read under (every create and delete
  // moves it) and they are younger than LOCAL_MAX_AGE_MS (a writer that died before moving it).
  const generation = (tenantId: string) => redis.key("whdestgen", tenantId);
  const local = new Map<string, { doc: DestinationDoc | null; gen: string; at: number }>();
  const changed = async (tenantId: string) => {
    await redis.redis.incr(generation(tenantId));
    await routes.invalidate(tenantId, [ALL]);
  };

  return {
    async ensureIndexes() {
      await destinations.createIndex({ tenant_id: 1, created_at: 1, _id: 1 });
    },

    /** Inserts a destination unless the tenant has the most it may have (409). */
    async create(doc: DestinationDoc): Promise<void> {
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
    async forDelivery(tenantId: string, id: string): Promise<DestinationDoc | null> {
      const gen = await redis.redis.get(generation(tenantId)).catch(() => null);
      const hit = local.get(id);
      if (gen !== null && hit && hit.gen === gen && Date.now() - hit.at < LOCAL_MAX_AGE_MS) return hit.doc;
      const doc = await destinations.findOne({ _id: id, tenant_id: tenantId });
      if (gen !== null) {
        if (local.size >= LOCAL_MAX_ENTRIES) local.delete(local.keys().next().value ?? "");
        local.set(id, { doc, gen, at: Date.now() });
      }
      return doc;
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
