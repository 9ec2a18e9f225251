import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fastifyTrustProxy, loadConfig, natsServers, requireInternalKey, requireMasterKey, requireWebhookKey } from "../src/index.js";

const trustProxy = (v: string | undefined) => loadConfig(v === undefined ? {} : { TRUST_PROXY: v }).TRUST_PROXY;

describe("TRUST_PROXY", () => {
  it("takes what Fastify's trustProxy takes: true, false, a hop count, addresses and CIDR ranges", () => {
    expect(trustProxy(undefined)).toBe(false);
    expect(trustProxy("")).toBe(false);
    expect(trustProxy("false")).toBe(false);
    expect(trustProxy("true")).toBe(true);
    expect(trustProxy("1")).toBe(1);
    expect(trustProxy("0")).toBe(0);
    expect(trustProxy("3")).toBe(3);
    expect(trustProxy("10.0.0.0/8, 192.168.1.7,::1, fd00::/8")).toEqual(["10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8"]);
    expect(trustProxy("loopback,uniquelocal,linklocal")).toEqual(["loopback", "uniquelocal", "linklocal"]);
    expect(trustProxy("10.0.0.0/255.0.0.0")).toEqual(["10.0.0.0/255.0.0.0"]);
  });

  it("stops start-up with a message naming TRUST_PROXY for anything else", () => {
    for (const bad of ["yes", "on", "-1", "1.5", "33", "10.0.0.0/33", "::1/129", "10.0.0/8", "1.2.3.4/", "10.0.0.0/255.0.255.0", "10.0.0.1,,10.0.0.2", "proxy.internal"]) {
      expect(() => trustProxy(bad), bad).toThrow(/TRUST_PROXY: /);
    }
  });

  it("a hop count trusts that many addresses back from the socket, whichever they are", () => {
    type Trust = (address: string, hop: number) => boolean;
    const one = fastifyTrustProxy(1) as Trust;
    const none = fastifyTrustProxy(0) as Trust;
    // Fastify 5.12 reads a bare number as "trust nothing": the count must arrive as a function.
    expect([typeof one, typeof none]).toEqual(["function", "function"]);
    expect([one("10.0.0.1", 0), one("10.0.0.1", 1), one("203.0.113.9", 0)]).toEqual([true, false, true]);
    expect(none("10.0.0.1", 0)).toBe(false);
    expect(fastifyTrustProxy(["10.0.0.0/8"])).toEqual(["10.0.0.0/8"]);
    expect(fastifyTrustProxy(true)).toBe(true);
  });
});

describe("keys", () => {
  it("FEEDS_MASTER_KEY is optional in the shared schema and required where tenancy is built", () => {
    const config = loadConfig({});
    expect(() => requireMasterKey(config)).toThrow(/FEEDS_MASTER_KEY: required where the tenancy service runs/);
    const key = randomBytes(32);
    expect(requireMasterKey(loadConfig({ FEEDS_MASTER_KEY: key.toString("base64") }))).toEqual(key);
  });

  it("FEEDS_WEBHOOK_KEY is optional in the shared schema, required where notification is built, and 32 bytes", () => {
    expect(() => requireWebhookKey(loadConfig({}))).toThrow(/FEEDS_WEBHOOK_KEY: required where the notification service runs/);
    expect(() => loadConfig({ FEEDS_WEBHOOK_KEY: randomBytes(16).toString("base64") })).toThrow(/FEEDS_WEBHOOK_KEY: must be 32 bytes/);
    const key = randomBytes(32);
    expect(requireWebhookKey(loadConfig({ FEEDS_WEBHOOK_KEY: key.toString("base64") }))).toEqual(key);
  });

  it("FEEDS_INTERNAL_KEY is required where the one-process system reaches a service over the network, and 32 bytes", () => {
    expect(() => requireInternalKey(loadConfig({}))).toThrow(/FEEDS_INTERNAL_KEY: required/);
    expect(() => loadConfig({ FEEDS_INTERNAL_KEY: randomBytes(16).toString("base64") })).toThrow(/FEEDS_INTERNAL_KEY: must be 32 bytes/);
    const key = randomBytes(32);
    expect(requireInternalKey(loadConfig({ FEEDS_INTERNAL_KEY: key.toString("base64") }))).toEqual(key);
  });

  it("FEEDS_SERVICE_KEY is 32 bytes; FEEDS_CALLER_KEYS names known processes, once each, with 32-byte keys", () => {
    expect(() => loadConfig({ FEEDS_SERVICE_KEY: randomBytes(31).toString("base64") })).toThrow(/FEEDS_SERVICE_KEY: must be 32 bytes/);
    const k = () => randomBytes(32).toString("base64");
    const [a, b] = [k(), k()];
    expect(loadConfig({ FEEDS_CALLER_KEYS: `gateway:${a},feed-worker:${b}` }).FEEDS_CALLER_KEYS).toEqual(
      new Map([["gateway", Buffer.from(a, "base64")], ["feed-worker", Buffer.from(b, "base64")]]),
    );
    expect(() => loadConfig({ FEEDS_CALLER_KEYS: `root:${a}` })).toThrow(/FEEDS_CALLER_KEYS: "root:[^"]*" is not <process>:<base64 key>/);
    expect(() => loadConfig({ FEEDS_CALLER_KEYS: `gateway:${a},gateway:${b}` })).toThrow(/FEEDS_CALLER_KEYS: gateway is named twice/);
    expect(() => loadConfig({ FEEDS_CALLER_KEYS: `gateway:${randomBytes(16).toString("base64")}` })).toThrow(/FEEDS_CALLER_KEYS: the key of gateway must be 32 bytes/);
  });
});

describe("NATS settings", () => {
  it("NATS_REPLICAS is 1 unless set, 1 to 5, and stops start-up naming it otherwise", () => {
    expect(loadConfig({}).NATS_REPLICAS).toBe(1);
    expect(loadConfig({ NATS_REPLICAS: "3" }).NATS_REPLICAS).toBe(3);
    for (const v of ["0", "6", "2.5", "three"]) expect(() => loadConfig({ NATS_REPLICAS: v }), v).toThrow(/NATS_REPLICAS/);
  });

  it("PUBLIC_URL is unset unless given, an http(s) URL without a trailing slash, and stops start-up naming it otherwise", () => {
    expect(loadConfig({}).PUBLIC_URL).toBeUndefined();
    expect(loadConfig({ PUBLIC_URL: "https://feeds.example.com/" }).PUBLIC_URL).toBe("https://feeds.example.com");
    expect(loadConfig({ PUBLIC_URL: "https://example.com/feeds/api/" }).PUBLIC_URL).toBe("https://example.com/feeds/api");
    for (const v of ["feeds.example.com", "ftp://example.com", "https://example.com/?a=1", "https://example.com/#x", "https://u:p@example.com", "javascript:alert(1)"]) {
      expect(() => loadConfig({ PUBLIC_URL: v }), v).toThrow(/PUBLIC_URL/);
    }
  });

  it("NATS_URL names one server or several, comma-separated", () => {
    expect(natsServers(loadConfig({}).NATS_URL)).toEqual(["nats://127.0.0.1:4222"]);
    expect(natsServers("nats://a:4222, nats://b:4222,nats://c:4222,")).toEqual(["nats://a:4222", "nats://b:4222", "nats://c:4222"]);
  });
});
