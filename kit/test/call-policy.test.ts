import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  callersOf,
  callKeyOf,
  callPolicyTable,
  callRules,
  keysFromConfig,
  loadConfig,
  namedSigners,
  processKeyEnv,
  serviceKeySet,
  serviceNames,
  signingKeyOf,
} from "../src/index.js";

// The allow-list (kit/src/call-policy.ts), the key set made from it (kit/src/service-keys.ts),
// and the page that documents both (docs/service-auth.md).

const doc = readFileSync(new URL("../../docs/service-auth.md", import.meta.url), "utf8");

describe("the allow-list", () => {
  it("is the table docs/service-auth.md shows", () => {
    const block = /<!-- call-policy:begin -->\n([^]*?)\n<!-- call-policy:end -->/.exec(doc);
    expect(block?.[1], "docs/service-auth.md: the table between the call-policy markers, as kit/src/call-policy.ts makes it").toBe(callPolicyTable());
  });

  it("lets the gateway alone call every sensitive RPC, GetCredential, CreateTenant, RotateSecret and EnsureStaff among them", () => {
    const sensitive = callRules().filter((r) => r.sensitive);
    for (const r of sensitive) expect(r.callers, r.method).toEqual(["gateway"]);
    expect(sensitive.map((r) => r.method)).toEqual(
      expect.arrayContaining([
        "feeds.tenancy.v1.TenancyService/GetCredential",
        "feeds.tenancy.v1.TenancyService/CreateTenant",
        "feeds.tenancy.v1.TenancyService/RotateSecret",
        "feeds.identity.v1.OperatorService/EnsureStaff",
      ]),
    );
  });

  it("names no worker on any tenancy or operator RPC, and the notification worker nowhere", () => {
    for (const r of callRules().filter((x) => x.audience === "tenancy" || x.method.includes("OperatorService"))) expect(r.callers, r.method).toEqual(["gateway"]);
    expect(namedSigners()).not.toContain("notification-worker");
    expect(namedSigners()).toEqual(["gateway", "feed", "graph", "engagement", "notification", "feed-worker", "graph-worker", "engagement-worker"]);
  });

  it("gives every service a rule for each of its RPCs, once", () => {
    const methods = callRules().map((r) => r.method);
    expect(new Set(methods).size).toBe(methods.length);
    expect([...callersOf().keys()]).toEqual([...serviceNames]);
  });
});

describe("the key set", () => {
  const root = randomBytes(32);

  it("has a signing key for each process the allow-list names and caller keys for each service, derived from the root", () => {
    const set = serviceKeySet(root);
    expect(Object.keys(set).filter((k) => k.startsWith("FEEDS_SERVICE_KEY_"))).toEqual(namedSigners().map((s) => `FEEDS_SERVICE_KEY_${s.toUpperCase().replace(/-/g, "_")}`));
    expect(set.FEEDS_SERVICE_KEY_FEED_WORKER).toBe(signingKeyOf(root, "feed-worker").toString("base64"));
    expect(set.FEEDS_CALLER_KEYS_TENANCY).toBe(`gateway:${callKeyOf(signingKeyOf(root, "gateway"), "tenancy").toString("base64")}`);
    expect(set.FEEDS_CALLER_KEYS_GRAPH?.split(",").map((e) => e.split(":")[0])).toEqual(["gateway", "feed", "feed-worker"]);
  });

  it("gives one process what it needs: the notify worker nothing, the gateway its key, a service both", () => {
    expect(processKeyEnv(root, "notification-worker")).toEqual({});
    expect(Object.keys(processKeyEnv(root, "gateway"))).toEqual(["FEEDS_SERVICE_KEY"]);
    expect(Object.keys(processKeyEnv(root, "tenancy", "tenancy"))).toEqual(["FEEDS_CALLER_KEYS"]);
    expect(Object.keys(processKeyEnv(root, "feed", "feed"))).toEqual(["FEEDS_SERVICE_KEY", "FEEDS_CALLER_KEYS"]);
  });

  it("is required where it is needed, naming the variable to set", () => {
    expect(() => keysFromConfig(loadConfig({}), "feed-worker")).toThrow(/FEEDS_SERVICE_KEY: required: the feed-worker process signs its calls with it \(FEEDS_SERVICE_KEY_FEED_WORKER/);
    expect(() => keysFromConfig(loadConfig({}), "tenancy", "tenancy")).toThrow(/FEEDS_CALLER_KEYS: required: the tenancy service verifies its callers with them \(FEEDS_CALLER_KEYS_TENANCY/);
    expect(() => keysFromConfig(loadConfig({}), "notification-worker")).not.toThrow();
    expect(() => keysFromConfig(loadConfig(processKeyEnv(root, "graph", "graph")), "graph", "graph")).not.toThrow();
  });
});
