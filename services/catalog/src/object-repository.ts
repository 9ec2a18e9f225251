import { MongoBulkWriteError, type Collection, type Db } from "mongodb";
import { createLocks, createReadCache, dateFieldsCodec, isDuplicateKey, type RedisConn } from "@feeds/kit";

export interface ObjectDoc {
  _id: string; // `${tenant_id}/${type}/${id}`
  tenant_id: string;
  type: string;
  id: string;
  /** The custom object as JSON text (at most 64 KB). */
  custom_json: string;
  updated_at: Date;
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

/** Create-or-replace of one document (`_id` comes from the filter on insert). */
const upsertOf = (d: ObjectDoc) => ({
  filter: { _id: d._id },
  update: { $set: { tenant_id: d.tenant_id, type: d.type, id: d.id, custom_json: d.custom_json, updated_at: d.updated_at } },
});

/** All MongoDB access for objects; every method takes the tenant first. */
export function createObjectRepository(db: Db) {
  const objects: Collection<ObjectDoc> = db.collection<ObjectDoc>("objects");
  const locks = createLocks(db, "object_locks");

  /** Upserts one document; answers whether it was created. */
  async function upsert(d: ObjectDoc): Promise<boolean> {
    const { filter, update } = upsertOf(d);
    try {
      const res = await objects.updateOne(filter, update, { upsert: true });
      return res.upsertedCount > 0;
    } catch (e) {
      // Two first writes of one key raced (FerretDB does not retry the upsert): ours is now a replace.
      if (!isDuplicateKey(e)) throw e;
      const res = await objects.updateOne(filter, update, { upsert: true });
      return res.upsertedCount > 0;
    }
  }

  return {
    get: (tenantId: string, type: string, id: string) => objects.findOne({ _id: key(tenantId, type, id) }),

    /** One query for any number of refs; missing ones are simply absent. */
    getMany: (tenantId: string, refs: ObjectKey[]) =>
      objects.find({ tenant_id: tenantId, _id: { $in: refs.map((r) => key(tenantId, r.type, r.id)) } }).toArray(),

    /** Create or replace; answers the stored document and whether it was created. */
    async put(tenantId: string, o: ObjectInput): Promise<{ doc: ObjectDoc; created: boolean }> {
      const doc = docOf(tenantId, o, new Date());
      return { doc, created: await upsert(doc) };
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
          await Promise.all(
            errors.map(async (we) => {
              const i = written[we.index] as number;
              try {
                if (we.code !== 11000) throw e;
                await upsert(docs[i] as ObjectDoc);
              } catch {
                failed.add(i);
              }
            }),
          );
        }
      }
      return docs.map((doc) => (failed.has(lastOf.get(doc._id) as number) ? { ok: false } : { ok: true, doc }));
    },

    /**
     * Runs `fn` while holding the object's lock, so that read-modify-write patches of one object
     * never interleave (FerretDB v1's conditional updates are not atomic; a unique insert is).
     */
    withObjectLock: <T>(tenantId: string, type: string, id: string, fn: () => Promise<T>) =>
      locks.withLock(`object:${key(tenantId, type, id)}`, fn),

    /**
     * Compare-and-set of custom: replaces it only while the stored document is still `prev`
     * (exact on MongoDB; on FerretDB v1 it narrows a race with an unlocked put to its own window).
     * Answers the new document, or null when it changed or vanished meanwhile.
     */
    async replaceCustom(tenantId: string, prev: ObjectDoc, customJson: string): Promise<ObjectDoc | null> {
      const now = new Date();
      const res = await objects.updateOne(
        { _id: key(tenantId, prev.type, prev.id), custom_json: prev.custom_json, updated_at: prev.updated_at },
        { $set: { custom_json: customJson, updated_at: now } },
      );
      return res.matchedCount === 1 ? { ...prev, custom_json: customJson, updated_at: now } : null;
    },

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
