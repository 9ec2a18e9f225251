import { randomUUID } from "node:crypto";
import type { RedisConn } from "./redis.js";
import { workerBeatsKey as key } from "./redis-keys.js";

// Liveness of the system's workers, for readiness: each consumer loop of each process beats
// once a second into a sorted set per worker (member: the process's instance, score: the time),
// and a worker is alive while some instance beat within ALIVE_MS. A process whose loop stopped
// (crashed, stuck, stopped) stops beating, and readiness names the worker.

/** Every worker of the system, as readiness names it (`worker:<name>`). */
export const workerNames = ["fanout", "follow", "notify", "webhooks"] as const;
export type WorkerName = (typeof workerNames)[number];

export const BEAT_MS = 1000;
export const ALIVE_MS = 5000;
const instance = randomUUID();

export function createWorkerBeats(conn: RedisConn) {
  return {
    /** One beat of this process's `worker` loop (old members pruned as it goes). */
    async beat(worker: WorkerName, now = Date.now()): Promise<void> {
      await conn.redis
        .multi()
        .zadd(key(conn, worker), now, instance)
        .zremrangebyscore(key(conn, worker), "-inf", now - 60_000)
        .pexpire(key(conn, worker), 120_000)
        .exec();
    },
    /** Whether some instance of `worker` beat within ALIVE_MS. */
    async alive(worker: WorkerName, now = Date.now()): Promise<boolean> {
      return (await conn.redis.zcount(key(conn, worker), now - ALIVE_MS, "+inf")) > 0;
    },
  };
}

export type WorkerBeats = ReturnType<typeof createWorkerBeats>;
