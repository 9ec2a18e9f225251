import { createReadCache, dateFieldsCodec, type ReadCache, type RedisConn } from "@feeds/kit";
import type { OperatorDoc, OperatorRepository, SessionDoc } from "./operator-repository.js";

// Operator sessions and operators from a Redis read cache: authenticating a console request
// (every operator route, the console's signal among them) asks MongoDB nothing while warm. Every
// write of an operator invalidates its entry before answering, so a disable, a role change or an
// accepted invite shows on the next request; a logout invalidates its session, and ending an
// operator's sessions invalidates each of them. Absent entries are cached too (an unknown token
// costs one lookup per TTL).

/** How long an entry lives without a write (a crashed writer's stale entry at most this). */
export const OPERATOR_CACHE_TTL_SECONDS = 300;
/** Operators and sessions have no tenant of their own in the cache's key. */
const SCOPE = "platform";

const operatorCodec = {
  encode: (d: OperatorDoc) => ({
    ...d,
    created_at: d.created_at.getTime(),
    updated_at: d.updated_at.getTime(),
    invite: d.invite && { token_hash: d.invite.token_hash, expires_at: d.invite.expires_at.getTime() },
  }),
  decode: (raw: unknown): OperatorDoc => {
    const o = raw as Omit<OperatorDoc, "created_at" | "updated_at" | "invite"> & {
      created_at: number;
      updated_at: number;
      invite: { token_hash: string; expires_at: number } | null;
    };
    return {
      ...o,
      created_at: new Date(o.created_at),
      updated_at: new Date(o.updated_at),
      invite: o.invite && { token_hash: o.invite.token_hash, expires_at: new Date(o.invite.expires_at) },
    };
  },
};

async function readOne<T>(cache: ReadCache<T>, id: string, load: (id: string) => Promise<T | null>): Promise<T | null> {
  const found = await cache.read(SCOPE, [id], async () => {
    const v = await load(id);
    return new Map(v ? [[id, v]] : []);
  });
  return found.get(id) ?? null;
}

export function withOperatorCache(repo: OperatorRepository, redis: RedisConn): OperatorRepository {
  const ops = createReadCache(redis, "operator", operatorCodec, { ttlSeconds: OPERATOR_CACHE_TTL_SECONDS });
  const sessions = createReadCache(redis, "session", dateFieldsCodec<SessionDoc>("expires_at", "created_at"), {
    ttlSeconds: OPERATOR_CACHE_TTL_SECONDS,
  });
  /** After a write of these operators: the next read sees MongoDB again. */
  const changed = async <T>(ids: string[], write: Promise<T>): Promise<T> => {
    const res = await write;
    await ops.invalidate(SCOPE, ids);
    return res;
  };

  return {
    ...repo,
    byId: (id) => readOne(ops, id, repo.byId),
    session: (hash) => readOne(sessions, hash, repo.session),
    insert: (doc) => changed([doc._id], repo.insert(doc)),
    updateIf: (id, filter, set, opts) => changed([id], repo.updateIf(id, filter, set, opts)),
    async deleteSession(hash) {
      const res = await repo.deleteSession(hash);
      await sessions.invalidate(SCOPE, [hash]);
      return res;
    },
    async deleteSessionsOf(operatorId) {
      // The sessions' keys are their hashes: find them, end them, then forget each cached one.
      const hashes = await repo.sessionHashesOf(operatorId);
      const res = await repo.deleteSessionsOf(operatorId);
      await sessions.invalidate(SCOPE, hashes);
      return res;
    },
  };
}
