import { MongoBulkWriteError, type Collection, type Db } from "mongodb";

interface ClaimDoc {
  /** The engagement outbox record of the change. */
  _id: string;
  at: Date;
}

/** Claims are kept this long: far beyond any writer or relay that could still count the change. */
export const CLAIM_TTL_MS = 60 * 60 * 1000;

/**
 * Who counted a reaction change. A change is counted by its writer (`recounts.reactionKinds`) and,
 * when the writer was slower than the outbox relay or died, by the relay too; the version of the
 * activity must move once per change, so whoever counts it first claims it (a unique insert keyed
 * by the change's outbox record) and only a successful claim moves the version. Claims of one
 * activity are made under its lock.
 */
export function createCountClaims(db: Db) {
  const claims: Collection<ClaimDoc> = db.collection<ClaimDoc>("engagement_count_claims");
  return {
    async ensureIndexes() {
      await claims.createIndex({ at: 1 });
    },
    /** Claims these changes; answers how many were not claimed before. */
    claim: async (records: string[]): Promise<number> => {
      if (records.length === 0) return 0;
      const at = new Date();
      try {
        return (await claims.insertMany(records.map((_id) => ({ _id, at })), { ordered: false })).insertedCount;
      } catch (e) {
        // Duplicates are claims made before; anything else is a failure of the count.
        if (!(e instanceof MongoBulkWriteError)) throw e;
        const errors = [e.writeErrors].flat();
        if (errors.length === 0 || errors.some((w) => w.code !== 11000)) throw e;
        return e.insertedCount;
      }
    },
    /** Drops claims past their time (run by the relays). */
    sweep: (now = Date.now()) => claims.deleteMany({ at: { $lt: new Date(now - CLAIM_TTL_MS) } }),
  };
}

export type CountClaims = ReturnType<typeof createCountClaims>;
