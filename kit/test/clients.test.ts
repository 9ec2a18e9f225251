import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import {
  createInternalAuth,
  createLogger,
  rootKeys,
  createNetworkClients,
  loadConfig,
  serveModules,
  serviceNames,
  serviceUrlVariable,
  type RpcServer,
} from "../src/index.js";

// The gateway on its own reaches every service over gRPC: all of <SERVICE>_URL, or no start.

const key = randomBytes(32).toString("base64");
const why = "test";
const urls = (url: string) => Object.fromEntries(serviceNames.map((n) => [serviceUrlVariable(n), url]));

let server: RpcServer;
beforeAll(async () => {
  const log = createLogger({ LOG_LEVEL: "silent" }, "test");
  server = await serveModules([], { host: "127.0.0.1", port: 0, log, auth: createInternalAuth(rootKeys(Buffer.from(key, "base64"))) });
});
afterAll(() => {
  // Not awaited: the clients' HTTP/2 sessions (never closed by connect-node) hold it open.
  void server.close();
});

describe("createNetworkClients", () => {
  it("refuses without a URL, naming each missing variable and no other", () => {
    expect(() => createNetworkClients(loadConfig({ FEEDS_INTERNAL_KEY: key }), why)).toThrow(
      new RegExp(serviceNames.map((n) => `${serviceUrlVariable(n)}: required`).join("[^]*")),
    );
    const allButGraph = { ...urls("http://127.0.0.1:1"), GRAPH_URL: "", FEEDS_INTERNAL_KEY: key };
    let message = "";
    try {
      createNetworkClients(loadConfig(allButGraph), why);
    } catch (e) {
      message = String(e);
    }
    expect(message.match(/[A-Z]+_URL/g)).toEqual(["GRAPH_URL"]);
  });

  it("refuses without the gateway's own key (or the root)", () => {
    expect(() => createNetworkClients(loadConfig(urls("http://127.0.0.1:1")), why)).toThrow(/FEEDS_SERVICE_KEY: required: the gateway process signs its calls with it \(FEEDS_SERVICE_KEY_GATEWAY/);
    const own = { ...urls("http://127.0.0.1:1"), FEEDS_SERVICE_KEY: randomBytes(32).toString("base64") };
    expect(() => createNetworkClients(loadConfig(own), why)).not.toThrow();
  });

  it("reaches each service at its own URL, signing with the internal key", async () => {
    const here = `http://127.0.0.1:${server.port}`;
    const clients = createNetworkClients(loadConfig({ ...urls(here), CATALOG_URL: "http://127.0.0.1:1", FEEDS_INTERNAL_KEY: key }), why);
    for (const n of serviceNames.filter((n) => n !== "catalog")) {
      expect((await clients.health[n].check({ service: "" })).status, n).toBe(HealthCheckResponse_ServingStatus.SERVING);
    }
    const down = await clients.health.catalog.check({ service: "" }).catch((e: unknown) => ConnectError.from(e));
    expect(down).toBeInstanceOf(ConnectError);
    expect((down as ConnectError).code).toBe(Code.Unavailable);
  });
});
