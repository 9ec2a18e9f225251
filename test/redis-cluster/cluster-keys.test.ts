import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Cluster, connectRedis, redisScript, type RedisConn } from "@feeds/kit";
import { dropNamespace } from "@feeds/kit/testing";
import { systemRedis } from "../support/api.js";

// The Redis Cluster the e2e-redis-cluster project runs the system on (three masters of its own):
// a tenant's keys share one slot, a script across two tags is refused, and a namespace's
// clean-up reaches every master.

let conn: RedisConn;
beforeAll(async () => {
  conn = await systemRedis();
});
afterAll(() => conn.close());

/** The keys of one master that match `pattern` (a whole SCAN). */
async function keysOn(master: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await master.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}

describe("the system's Redis Cluster", () => {
  it("is a cluster of three masters, and the run's keys sit on more than one of them", async () => {
    expect(conn.redis).toBeInstanceOf(Cluster);
    expect(conn.masters()).toHaveLength(3);
    // The staff session of the run (and whatever the other files left) plus keys of 50 tenants.
    await Promise.all(Array.from({ length: 50 }, (_, i) => conn.redis.set(conn.tenantKey(`spread${i}`, "k"), "1", "EX", 60)));
    const perMaster = await Promise.all(conn.masters().map(async (m) => (await keysOn(m, conn.key("*"))).length));
    expect(perMaster.filter((n) => n > 0).length, String(perMaster)).toBe(3);
  });

  it("runs a script over keys of one tenant, and refuses one over two tenants' keys", async () => {
    const script = redisScript<string[]>(conn.redis, "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return {KEYS[1], KEYS[2]}");
    const a = `t_${randomBytes(4).toString("hex")}`;
    expect(await script(2, conn.tenantKey(a, "x"), conn.tenantKey(a, "y"), "1")).toEqual([conn.tenantKey(a, "x"), conn.tenantKey(a, "y")]);
    // Another tenant whose tag hashes to another slot (almost any: 16,384 slots).
    const master = conn.masters()[0] as Redis;
    const slotOf = async (key: string) => Number(await master.call("cluster", "keyslot", key));
    let b = `t_${randomBytes(4).toString("hex")}`;
    while ((await slotOf(conn.tenantKey(b, "x"))) === (await slotOf(conn.tenantKey(a, "x")))) b = `t_${randomBytes(4).toString("hex")}`;
    await expect(script(2, conn.tenantKey(a, "x"), conn.tenantKey(b, "x"), "1")).rejects.toThrow(/slot/i);
  });

  it("a namespace's clean-up deletes its keys from every master", async () => {
    const ns = `rcluster_drop_${randomBytes(4).toString("hex")}`;
    const own = await connectRedis({ REDIS_URL: inject("redisUrl"), FEEDS_NAMESPACE: ns });
    try {
      await Promise.all(Array.from({ length: 200 }, (_, i) => own.redis.set(own.tenantKey(`t${i}`, "k"), "1")));
      const count = async () => Promise.all(own.masters().map(async (m) => (await keysOn(m, `${ns}:*`)).length));
      expect((await count()).every((n) => n > 0)).toBe(true);
      await dropNamespace(ns, { redis: own.redis });
      expect(await count()).toEqual([0, 0, 0]);
    } finally {
      await own.close();
    }
  });
});
