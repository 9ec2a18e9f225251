import { createHash } from "node:crypto";
import type { RedisClient } from "./redis.js";

/** A Lua script's call: `(numKeys, ...keys, ...args)`, every key of one hash tag. */
export type RedisScript<T = unknown> = (numKeys: number, ...args: string[]) => Promise<T>;

/**
 * A Lua script run by its SHA (EVALSHA; EVAL when the server does not have it yet, which caches
 * it there). Not ioredis' defineCommand: with auto-pipelining on a cluster, ioredis places a
 * defined command by its first argument (the key count) instead of its first key, and a
 * pipeline that mixes nodes then fails whole; EVALSHA it places by its first key.
 */
export function redisScript<T = unknown>(redis: RedisClient, lua: string): RedisScript<T> {
  const sha = createHash("sha1").update(lua).digest("hex");
  return async (numKeys, ...args) => {
    try {
      return (await redis.evalsha(sha, numKeys, ...args)) as T;
    } catch (e) {
      if (!(e instanceof Error) || !e.message.startsWith("NOSCRIPT")) throw e;
      return (await redis.eval(lua, numKeys, ...args)) as T;
    }
  };
}
