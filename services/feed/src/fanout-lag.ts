import { observeFanoutLag, processMetrics, redisScript, type Logger, type RedisConn } from "@feeds/kit";

// Fan-out lag: seconds from the write's acknowledgement (the activity's created_at) to its last
// chunk written. A fan-out of one chunk ends in its activity task. A shared one ends with
// whichever comes last of its chunk tasks (any replica) and the activity task that learns how
// many it published; Redis keeps the tally (a set of chunk digests, so a redelivered chunk counts
// once) and a mark that lets exactly one of them observe. Metrics never fail a task.

const TALLY = `
local ttl = ARGV[1]
if ARGV[2] == 'total' then
  redis.call('SET', KEYS[1], ARGV[3], 'EX', ttl)
else
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('EXPIRE', KEYS[2], ttl)
end
local total = tonumber(redis.call('GET', KEYS[1]) or '-1')
if total < 0 or redis.call('SCARD', KEYS[2]) < total then return 0 end
if redis.call('SET', KEYS[3], '1', 'NX', 'EX', ttl) then return 1 end
return 0
`;
const TALLY_TTL_SECONDS = 3600;

export function createFanoutLag(conn: RedisConn, log: Logger) {
  const { redis } = conn;
  const tally = redisScript<number>(redis, TALLY);
  const metrics = processMetrics();
  const observe = (tenantId: string, ackedAt: Date) => observeFanoutLag(metrics, tenantId, (Date.now() - ackedAt.getTime()) / 1000);

  async function count(tenantId: string, activityId: string, ackedAt: Date, mode: "total" | "chunk", value: string) {
    const keys = ["total", "done", "seen"].map((k) => conn.tenantKey(tenantId, "fanlag", k, activityId));
    try {
      if ((await tally(3, ...keys, String(TALLY_TTL_SECONDS), mode, value)) === 1) observe(tenantId, ackedAt);
    } catch (err) {
      log.debug({ err: String(err) }, "fan-out lag tally failed");
    }
  }

  return {
    /** The only chunk of a fan-out was written. */
    single: observe,
    /** A shared fan-out's activity task published `chunks` chunk tasks. */
    published: (tenantId: string, activityId: string, ackedAt: Date, chunks: number) =>
      count(tenantId, activityId, ackedAt, "total", String(chunks)),
    /** A chunk task (named by its digest) of a shared fan-out was written. */
    chunkWritten: (tenantId: string, activityId: string, ackedAt: Date, digest: string) =>
      count(tenantId, activityId, ackedAt, "chunk", digest),
  };
}

export type FanoutLag = ReturnType<typeof createFanoutLag>;
