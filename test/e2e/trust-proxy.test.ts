import { spawnSync } from "node:child_process";
import { join } from "node:path";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { fastifyTrustProxy, loadConfig } from "@feeds/kit";
import { envelope, freshRateWindow, http, newIp, uniqueEmail } from "../support/api.js";

// TRUST_PROXY decides which X-Forwarded-For entry is the client address that the per-address
// login and invite limits count. The test system runs with TRUST_PROXY=1: one proxy hop.

describe("TRUST_PROXY with a hop count", () => {
  it("a client cannot dodge the per-address login limit by writing its own X-Forwarded-For entries", async () => {
    // The proxy in front appends the address it saw (`real`); the client wrote the left part.
    const real = newIp();
    await freshRateWindow();
    for (let i = 0; i < 10; i++) {
      const res = await http("POST", "/operator/login", { body: { email: uniqueEmail(), password: "wrong password" }, ip: `${newIp()}, ${real}` });
      expect(res.status).toBe(401);
    }
    const limited = await http("POST", "/operator/login", { body: { email: uniqueEmail(), password: "wrong password" }, ip: `${newIp()}, ${real}` });
    expect(limited.status).toBe(429);
    expect(envelope(limited).code).toBe("RATE_LIMITED");
    // Another address behind the same proxy still has its own window.
    const other = await http("POST", "/operator/login", { body: { email: uniqueEmail(), password: "wrong password" }, ip: `${real}, ${newIp()}` });
    expect(other.status).toBe(401);
  });
});

describe("TRUST_PROXY as the gateway hands it to Fastify", () => {
  /** The address Fastify reports for a request from `socket` carrying `xff`. */
  async function clientAddress(trustProxy: string | undefined, socket: string, xff: string): Promise<string> {
    const app = Fastify({ trustProxy: fastifyTrustProxy(loadConfig(trustProxy === undefined ? {} : { TRUST_PROXY: trustProxy }).TRUST_PROXY) });
    app.get("/", async (req) => req.ip);
    try {
      const res = await app.inject({ method: "GET", url: "/", remoteAddress: socket, headers: { "x-forwarded-for": xff } });
      return res.body;
    } finally {
      await app.close();
    }
  }

  it("picks the entry each form names", async () => {
    const xff = "198.51.100.1, 203.0.113.2";
    const seen = {
      unset: await clientAddress(undefined, "10.0.0.1", xff),
      false: await clientAddress("false", "10.0.0.1", xff),
      true: await clientAddress("true", "10.0.0.1", xff),
      hops0: await clientAddress("0", "10.0.0.1", xff),
      hops1: await clientAddress("1", "10.0.0.1", xff),
      hops2: await clientAddress("2", "10.0.0.1", xff),
      cidr: await clientAddress("10.0.0.0/8", "10.0.0.1", xff),
      cidrFromElsewhere: await clientAddress("10.0.0.0/8", "192.0.2.9", xff),
      list: await clientAddress("10.0.0.1, 203.0.113.2", "10.0.0.1", xff),
      named: await clientAddress("loopback", "127.0.0.1", xff),
    };
    expect(seen).toEqual({
      unset: "10.0.0.1",
      false: "10.0.0.1",
      true: "198.51.100.1",
      hops0: "10.0.0.1",
      hops1: "203.0.113.2",
      hops2: "198.51.100.1",
      cidr: "203.0.113.2",
      cidrFromElsewhere: "192.0.2.9",
      list: "198.51.100.1",
      named: "203.0.113.2",
    });
  });

  it("the gateway refuses to start on a value it cannot read, naming the variable", () => {
    const root = new URL("../..", import.meta.url).pathname;
    const res = spawnSync(process.execPath, [join(root, "gateway/dist/main.js")], {
      env: { PATH: process.env.PATH, TRUST_PROXY: "yes", LOG_LEVEL: "silent" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(/TRUST_PROXY: "yes" is not an IP address or CIDR range/);
  });
});
