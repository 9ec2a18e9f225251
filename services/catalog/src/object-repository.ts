import { MongoBulkWriteError, type Collection, type Db } from "mongodb";
import { createReadCache, dateFieldsCodec, type RedisConn } from "@feeds/kit";

export interface ObjectDoc {
  _id: string; // `${tenant_id}/${type}/${id}`
  tenant_id: string;
  type: string;
  id: string;
  /** The custom object as JSON text (at most 64 KB). */
  custom_json: string;
  updated_at: Date;
  /** Moves on every write (put or patch): what a patch's compare-and-set is conditioned on. Absent
   * on objects written before versions (a patch of one conditions on its absence). */
  version?: number;
}

export interface ObjectKey {
  type: string;
  id: string;
}

export interface ObjectInput extends ObjectKey {
  customJson: string;
}

/** Outcome of one item of a bulk upsert, in input order. */
export type PutOutcome = { ok: true; doc: ObjectDoc } | { ok: false };

const key = (tenantId: string, type: string, id: string) => `${tenantId}/${type}/${id}`;

const docOf = (tenantId: string, o: ObjectInput, now: Date): ObjectDoc => ({
  _id: key(tenantId, o.type, o.id),
  tenant_id: tenantId,
  type: o.type,
  id: o.id,
  custom_json: o.customJson,
  updated_at: now,
});

/** Create-or-replace of one document (`_id` comes from the filter on insert; racing first writes
 * of one key are retried by the store, as MongoDB does for an upsert on `_id`). */
const upsertOf = (d: ObjectDoc) => ({
  filter: { _id: d._id },
  update: {
    $set: { tenant_id: d.tenant_id, type: d.type, id: d.id, custom_json: d.custom_json, updated_at: d.updated_at },
    $inc: { version: 1 },
  },
});

/** All MongoDB access for objects; every method takes the tenant first. */
export function createObjectRepository(db: Db) {
  const objects: Collection<ObjectDoc> = db.collection<ObjectDoc>("objects");

  return {
    get: (tenantId: string, type: string, id: string) => objects.findOne({ _id: key(tenantId, type, id) }),

    /** One query for any number of refs; missing ones are simply absent. */
    getMany: (tenantId: string, refs: ObjectKey[]) =>
      objects.find({ tenant_id: tenantId, _id: { $in: refs.map((r) => key(tenantId, r.type, r.id)) } }).toArray(),

    /** Create or replace; answers the stored document and whether it was created. */
    async put(tenantId: string, o: ObjectInput): Promise<{ doc: ObjectDoc; created: boolean }> {
      const doc = docOf(tenantId, o, new Date());
      const { filter, update } = upsertOf(doc);
      const res = await objects.updateOne(filter, update, { upsert: true });
      return { doc, created: res.upsertedCount > 0 };
    },

    /**
     * Create or replace many in one round trip. Items are independent: one failure never stops
     * the others. Items naming the same key apply in input order, so only the last is written.
     */
    async putMany(tenantId: string, items: ObjectInput[]): Promise<PutOutcome[]> {
      const now = new Date();
      const docs = items.map((o) => docOf(tenantId, o, now));
      const lastOf = new Map<string, number>();
      docs.forEach((d, i) => lastOf.set(d._id, i));
      const written = [...lastOf.values()].sort((a, b) => a - b);
      const failed = new Set<number>();
      if (written.length) {
        try {
          await objects.bulkWrite(
            written.map((i) => ({ updateOne: { ...upsertOf(docs[i] as ObjectDoc), upsert: true } })),
            { ordered: false },
          );
        } catch (e) {
          if (!(e instanceof MongoBulkWriteError)) throw e;
          const errors = [e.writeErrors].flat();
          if (errors.length === 0) throw e;
          for (const we of errors) failed.add(written[we.index] as number);
        }
      }
      return docs.map((doc) => (failed.has(lastOf.get(doc._id) as number) ? { ok: false } : { ok: true, doc }));
    },

    /**
     * Compare-and-set of custom: replaces it only while the stored document is still at `prev`'s
     * version (one atomic update: of racers from one version exactly one wins). Answers the new
     * document, or null when it changed or vanished meanwhile.
     */
    replaceCustom: (tenantId: string, prev: ObjectDoc, customJson: string): Promise<ObjectDoc | null> =>
      objects.findOneAndUpdate(
        { _id: key(tenantId, prev.type, prev.id), version: prev.version ?? { $exists: false } },
        { $set: { custom_json: customJson, updated_at: new Date() }, $inc: { version: 1 } },
        { returnDocument: "after" },
      ),

    /** Answers whether there was a document to delete. */
    async delete(tenantId: string, type: string, id: string): Promise<boolean> {
      const res = await objects.deleteOne({ _id: key(tenantId, type, id) });
      return res.deletedCount === 1;
    },
  };
}

export type ObjectRepository = ReturnType<typeof createObjectRepository>;

/** How long an object stays in the read cache (a crashed writer's stale entry at most this). */
export const OBJECT_CACHE_TTL_SECONDS = 300;

const refOf = (o: ObjectKey) => `${o.type}:${o.id}`;
const objectCodec = dateFieldsCodec<ObjectDoc>("updated_at");

/**
 * The repository with `getMany` (the objects sidecar of every feed read) served from a Redis
 * read cache; every write of an object invalidates its entry before answering.
 */
export function withObjectCache(repo: ObjectRepository, redis: RedisConn): ObjectRepository {
  const cache = createReadCache(redis, "object", objectCodec, { ttlSeconds: OBJECT_CACHE_TTL_SECONDS });
  return {
    ...repo,
    async getMany(tenantId, refs) {
      const byRef = new Map(refs.map((r) => [refOf(r), r]));
      const found = await cache.read(tenantId, [...byRef.keys()], async (missing) => {
        const docs = await repo.getMany(tenantId, missing.map((m) => byRef.get(m) as ObjectKey));
        return new Map(docs.map((d) => [refOf(d), d]));
      });
      return [...found.values()];
    },
    async put(tenantId, o) {
      const res = await repo.put(tenantId, o);
      await cache.invalidate(tenantId, [refOf(o)]);
      return res;
    },
    async putMany(tenantId, items) {
      const res = await repo.putMany(tenantId, items);
      await cache.invalidate(tenantId, items.map(refOf));
      return res;
    },
    async replaceCustom(tenantId, prev, customJson) {
      const res = await repo.replaceCustom(tenantId, prev, customJson);
      await cache.invalidate(tenantId, [refOf(prev)]);
      return res;
    },
    async delete(tenantId, type, id) {
      const res = await repo.delete(tenantId, type, id);
      await cache.invalidate(tenantId, [refOf({ type, id })]);
      return res;
    },
  };
}
