// The Lua scripts of the notification signal (signal.ts), each atomic in Redis, over an owner's
// hash {v, unseen, unread} and the sorted set of its changes in flight ("intents": member the
// write id, score its deadline in epoch ms).

const TTL_SECONDS = 30 * 86_400;
/** How long a change may take between its intent and its finish before readers take it for dead. */
export const INTENT_MS = 10_000;

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
  redis.call('HDEL', KEYS[1], 'unseen', 'unread')
  redis.call('EXPIRE', KEYS[1], ${TTL_SECONDS})
  return n
end
`;

/** KEYS: hash, intents. ARGV: write id, now. Answers the new version. */
export const FINISH = `${BUMP}
redis.call('ZREM', KEYS[2], ARGV[1])
return tostring(bump(tonumber(ARGV[2])))
`;

/** KEYS: hash, intents. ARGV: now. Answers {v, unseen, unread} ('' for counts to rebuild). */
export const PEEK = `${BUMP}
local now = tonumber(ARGV[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1)
local v = redis.call('HGET', KEYS[1], 'v')
if #dead > 0 or not v then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  return {tostring(bump(now)), '', ''}
end
return {v, redis.call('HGET', KEYS[1], 'unseen') or '', redis.call('HGET', KEYS[1], 'unread') or ''}
`;

/** KEYS: hash. ARGV: the version counted at, unseen, unread. */
export const FILL = `
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'unseen', ARGV[2], 'unread', ARGV[3])
end
return 1
`;
