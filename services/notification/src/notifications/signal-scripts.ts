// The Lua scripts of the notification signal (signal.ts), each atomic in Redis, over an owner's
// hash {v, unseen, unread, at, recheck} and the sorted set of its changes in flight ("intents":
// member the write id, score its deadline in epoch ms). `at` is when the counts were filled;
// `recheck` is set when a reader took an intent for dead: counts filled before it are counted
// again once it has passed (a write that was only slow may land after the takeover's recount).

const TTL_SECONDS = 30 * 86_400;
/** How long a change may take between its intent and its finish before readers take it for dead. */
export const INTENT_MS = 10_000;
/** Counts older than this are counted again, whatever happened: the bound on any count gone wrong. */
export const COUNTS_MAX_AGE_MS = 5 * 60_000;

/** KEYS: intents. ARGV: write id, deadline, the set's expiry (ms). */
export const BEGIN = `
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

const BUMP = `
local function bump(now)
  local n = tonumber(redis.call('HGET', KEYS[1], 'v') or '0') + 1
  if now > n then n = now end
  redis.call('HSET', KEYS[1], 'v', n)
  redis.call('HDEL', KEYS[1], 'unseen', 'unread', 'at')
  redis.call('EXPIRE', KEYS[1], ${TTL_SECONDS})
  return n
end
`;

/** KEYS: hash, intents. ARGV: write id, now. Answers the new version. */
export const FINISH = `${BUMP}
redis.call('ZREM', KEYS[2], ARGV[1])
return tostring(bump(tonumber(ARGV[2])))
`;

/**
 * KEYS: hash, intents. ARGV: now. Answers {v, unseen, unread, changing}: '' for counts to rebuild
 * (none, older than COUNTS_MAX_AGE_MS, or filled before a passed recheck), and how many changes
 * are in flight (their writes may have landed in MongoDB already: the counts are those of `v`,
 * not necessarily of now). Intents past their deadline are writers that died: the version moves
 * (what their finish would have done) and counts filled before now + INTENT_MS are counted again
 * after it.
 */
export const PEEK = `${BUMP}
local now = tonumber(ARGV[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1)
local v = redis.call('HGET', KEYS[1], 'v')
if #dead > 0 or not v then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  local n = bump(now)
  if #dead > 0 then redis.call('HSET', KEYS[1], 'recheck', now + ${INTENT_MS}) end
  return {tostring(n), '', '', tostring(redis.call('ZCARD', KEYS[2]))}
end
local c = redis.call('HMGET', KEYS[1], 'unseen', 'unread', 'at', 'recheck')
local at = tonumber(c[3] or '0')
local recheck = tonumber(c[4] or '0')
local changing = tostring(redis.call('ZCARD', KEYS[2]))
if not c[1] or not c[2] or now - at > ${COUNTS_MAX_AGE_MS} or (recheck > 0 and now >= recheck and at < recheck) then
  return {v, '', '', changing}
end
return {v, c[1], c[2], changing}
`;

/** KEYS: hash. ARGV: the version counted at, unseen, unread, now (when the count started). */
export const FILL = `
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'unseen', ARGV[2], 'unread', ARGV[3], 'at', ARGV[4])
  local recheck = tonumber(redis.call('HGET', KEYS[1], 'recheck') or '0')
  if recheck > 0 and tonumber(ARGV[4]) >= recheck then redis.call('HDEL', KEYS[1], 'recheck') end
end
return 1
`;
