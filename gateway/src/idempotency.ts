import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { FeedsError, conflict, processMetrics, redisScript, type Config, type Logger, type RedisConn } from "@feeds/kit";
import type { Operator } from "@feeds/proto/feeds/identity/v1/identity";
import type { TenantAuth } from "./auth.js";
import { fingerprintOf, keyOf, principalOf, scopeHash } from "./idempotency-key.js";

// Idempotency-Key on every POST, PUT, PATCH and DELETE (contract section 6; docs/idempotency.md).
// One Redis hash per key, under the caller's tenant tag: first a running marker {s: run, t: the
// owner's token, f: the request's fingerprint}, refreshed while the request runs and lapsing
// MARKER_TTL after a crashed gateway's last refresh; then the kept answer {s: done, f, st, h, b}
// for 24 hours, or {s: unkept, f, st} when the answer was too large to keep. Only the owner's
// token finishes or releases a marker.

/** How long a kept answer is replayed. */
export const RECORD_TTL_SECONDS = 24 * 3600;
/** Answers larger than this are not kept: a repeat answers 409 instead of running again. */
export const MAX_KEPT_BYTES = 1024 * 1024;
/** The answer's headers a replay repeats (the request id and RateLimit fields are the replay's own). */
const KEPT_HEADERS = ["content-type", "etag", "location"] as const;
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

// KEYS[1] record; ARGV: token, fingerprint, marker TTL (ms). Nothing there: the marker is set and
// nil answered (the caller runs); else the record's state, fingerprint, status, headers, body.
const CLAIM = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 's', 'run', 't', ARGV[1], 'f', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return nil
end
return redis.call('HMGET', KEYS[1], 's', 'f', 'st', 'h', 'b')
`;
// KEYS[1] record; ARGV: token, TTL (ms). Extends the owner's marker.
const REFRESH = `
if redis.call('HGET', KEYS[1], 't') == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;
// KEYS[1] record; ARGV: token, state (done, unkept), status, headers, body, TTL (s). Replaces the
// owner's marker with the kept answer; 0 when the marker is no longer the owner's.
const FINISH = `
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
local f = redis.call('HGET', KEYS[1], 'f')
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 's', ARGV[2], 'f', f, 'st', ARGV[3], 'h', ARGV[4], 'b', ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
`;
// KEYS[1] record; ARGV: token. Drops the owner's marker, so that a retry runs.
const RELEASE = `
if redis.call('HGET', KEYS[1], 't') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

interface Claim {
  key: string;
  token: string;
  timer: NodeJS.Timeout;
}

export interface Authorized {
  tenant: TenantAuth | null;
  operator: { operator: Operator } | null;
}

/** Kept: 2xx and 4xx but 401 (a fresh token may succeed) and 429 (a wait may). */
export const keeps = (status: number) => (status >= 200 && status < 300) || (status >= 400 && status < 500 && status !== 401 && status !== 429);

/**
 * Installs the hooks that keep answers and answers `claim`, which a route calls once its caller is
 * authorized and its input valid. The marker lives REQUEST_TIMEOUT_MS + 5 s (35 s by default) and
 * is refreshed every third of that while the request runs.
 */
export function createIdempotency(app: FastifyInstance, conn: RedisConn, config: Pick<Config, "REQUEST_TIMEOUT_MS">, log: Pick<Logger, "error">) {
  const markerTtlMs = config.REQUEST_TIMEOUT_MS + 5000;
  const claimScript = redisScript<(string | null)[] | null>(conn.redis, CLAIM);
  const refresh = redisScript<number>(conn.redis, REFRESH);
  const finish = redisScript<number>(conn.redis, FINISH);
  const release = redisScript<number>(conn.redis, RELEASE);
  const counted = processMetrics().idempotentRequests;
  const claims = new WeakMap<FastifyRequest, Claim>();

  function settle(req: FastifyRequest): Claim | undefined {
    const c = claims.get(req);
    if (!c) return undefined;
    claims.delete(req);
    clearInterval(c.timer);
    return c;
  }

  async function keep(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<void> {
    const c = settle(req);
    if (!c) return;
    const status = reply.statusCode;
    try {
      if (!keeps(status)) {
        await release(1, c.key, c.token);
        counted.inc({ outcome: "released" });
        return;
      }
      const body = payload === undefined || payload === null ? "" : payload;
      const whole = typeof body === "string" && Buffer.byteLength(body) <= MAX_KEPT_BYTES;
      const headers: Record<string, string> = {};
      for (const h of KEPT_HEADERS) {
        const v = reply.getHeader(h);
        if (typeof v === "string" || typeof v === "number") headers[h] = String(v);
      }
      const args = whole ? ["done", String(status), JSON.stringify(headers), body] : ["unkept", String(status), "{}", ""];
      await finish(1, c.key, c.token, ...args, String(RECORD_TTL_SECONDS));
      counted.inc({ outcome: "kept" });
    } catch (err) {
      // The marker lapses within its TTL; a retry after that runs the write again. Loud, not silent.
      log.error({ err, requestId: req.id, status }, "idempotency record not kept: a retry after the marker lapses runs again");
    }
  }

  app.addHook("onSend", async (req, reply, payload) => {
    await keep(req, reply, payload);
    return payload;
  });
  // An answer that never reached onSend (its serialization failed): let a retry run.
  app.addHook("onResponse", async (req) => {
    const c = settle(req);
    if (c) await release(1, c.key, c.token).catch(() => undefined);
  });

  return {
    /**
     * For a write with an Idempotency-Key (validated here: 400 naming the header): nothing kept
     * yet, so the request runs (false; its answer is kept by the hooks); the kept answer replayed
     * (true: the reply is sent); or a refusal thrown: 409 for another request under the key or an
     * answer too large to keep, 429 with Retry-After 1 while the first still runs. GET and HEAD
     * ignore the header; requests without a credential validate it and keep nothing.
     */
    async claim(req: FastifyRequest, reply: FastifyReply, auth: Authorized): Promise<boolean> {
      if (!WRITES.has(req.method)) return false;
      const key = keyOf(req.headers["idempotency-key"], req.raw.rawHeaders);
      const principal = principalOf(auth);
      if (key === undefined || !principal) return false;
      const hash = scopeHash(principal, req.method, req.routeOptions.url ?? req.url, req.params, key);
      const redisKey = principal.tenantId ? conn.tenantKey(principal.tenantId, "idem", hash) : conn.taggedKey("staff", "idem", hash);
      const fingerprint = fingerprintOf(req.query, req.body);
      const token = randomUUID();
      const found = await claimScript(1, redisKey, token, fingerprint, String(markerTtlMs));
      if (!found) {
        const timer = setInterval(() => void refresh(1, redisKey, token, String(markerTtlMs)).catch(() => undefined), markerTtlMs / 3);
        timer.unref();
        claims.set(req, { key: redisKey, token, timer });
        return false;
      }
      const [state, f, status, headers, body] = found;
      if (f !== fingerprint) {
        counted.inc({ outcome: "conflict" });
        throw conflict("this Idempotency-Key was used for another request (method, path, query and body must be the same)");
      }
      if (state === "run") {
        counted.inc({ outcome: "in_flight" });
        throw new FeedsError("RATE_LIMITED", "a request with this Idempotency-Key is still running", [], { retryAfterSeconds: 1 });
      }
      if (state !== "done") {
        counted.inc({ outcome: "conflict" });
        throw conflict(`this Idempotency-Key's request was answered ${status ?? ""} and its answer was too large to keep`);
      }
      counted.inc({ outcome: "replayed" });
      reply.code(Number(status));
      reply.headers(JSON.parse(headers ?? "{}") as Record<string, string>);
      reply.header("idempotent-replayed", "true");
      void reply.send(body ?? "");
      return true;
    },
  };
}

export type Idempotency = ReturnType<typeof createIdempotency>;
