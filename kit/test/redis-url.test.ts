import { describe, expect, it } from "vitest";
import { loadConfig, parseRedisUrl } from "../src/index.js";

// REDIS_URL's two forms: one Redis as ioredis reads its URL, or a Redis Cluster by some of its nodes.

describe("REDIS_URL", () => {
  it("passes a single Redis's URL through as given", () => {
    for (const url of ["redis://127.0.0.1:6379", "rediss://user:pw@redis.example:6380/2", "redis://:secret@h"]) {
      expect(parseRedisUrl(url)).toEqual({ kind: "single", url });
    }
  });

  it("reads a cluster's nodes (port 6379 when left out), its user and password, and TLS", () => {
    expect(parseRedisUrl("redis+cluster://10.0.0.1:7000,10.0.0.2,redis-3.internal:7002/")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 6379 },
        { host: "redis-3.internal", port: 7002 },
      ],
      auth: {},
      tls: false,
    });
    expect(parseRedisUrl("rediss+cluster://feeds:p%40ss%3Aword@[::1]:7000,[fd00::2]")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "::1", port: 7000 },
        { host: "fd00::2", port: 6379 },
      ],
      auth: { username: "feeds", password: "p@ss:word" },
      tls: true,
    });
    expect(parseRedisUrl("redis+cluster://:only-a-password@h1:7000")).toMatchObject({ auth: { password: "only-a-password" } });
  });

  it("stops start-up with a message naming REDIS_URL for anything else", () => {
    for (const bad of ["http://h:6379", "127.0.0.1:6379", "redis+cluster://", "redis+cluster://h1:7000,,h2:7001", "redis+cluster://h1:99999", "redis+cluster://h1:7000/0", "redis+cluster://%zz@h1"]) {
      expect(parseRedisUrl(bad), bad).toHaveProperty("error");
      expect(() => loadConfig({ REDIS_URL: bad }), bad).toThrow(/REDIS_URL: /);
    }
    expect(loadConfig({ REDIS_URL: "redis+cluster://h1:7000,h2:7001" }).REDIS_URL).toBe("redis+cluster://h1:7000,h2:7001");
  });
});
