import { afterEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ListAllowedOriginsResponseSchema } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { createLogger } from "@feeds/kit";
import { createOriginUnion, crossOriginPath, type OriginUnion } from "../src/cors.js";

// The preflight set: held in memory, read again from tenancy only when tenancy's stamp moved.
// (test/e2e/cors.test.ts counts the same through the real system.)

function fakes() {
  const state = { stamp: null as string | null, origins: ["https://a.example"], calls: 0 };
  const redis = { key: (...p: string[]) => p.join(":"), redis: { get: async () => state.stamp } };
  const tenancy = {
    listAllowedOrigins: async () => {
      state.calls++;
      return create(ListAllowedOriginsResponseSchema, { origins: [...state.origins] });
    },
  };
  return { state, redis, tenancy };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let union: OriginUnion | undefined;
afterEach(() => union?.close());

describe("the union of allowed origins", () => {
  it("is loaded once, answered from memory, and reloaded when the stamp moves", async () => {
    const { state, redis, tenancy } = fakes();
    union = createOriginUnion({ tenancy, redis: redis as never, log: createLogger({ LOG_LEVEL: "silent" }, "test"), pollMs: 10 });
    expect(union.has("https://a.example")).toBe(false); // nothing before the first load
    union.start();
    await sleep(60);
    for (let i = 0; i < 1000; i++) union.has(i % 2 ? "https://a.example" : "https://b.example");
    expect(union.has("https://a.example")).toBe(true);
    expect(union.has("https://b.example")).toBe(false);
    expect(state.calls).toBe(1);

    state.origins = ["https://b.example"];
    state.stamp = "moved";
    await sleep(60);
    expect(state.calls).toBe(2);
    expect(union.has("https://a.example")).toBe(false);
    expect(union.has("https://b.example")).toBe(true);
  });

  it("keeps the last set while tenancy fails", async () => {
    const { state, redis, tenancy } = fakes();
    union = createOriginUnion({ tenancy, redis: redis as never, log: createLogger({ LOG_LEVEL: "silent" }, "test"), pollMs: 10 });
    union.start();
    await sleep(40);
    tenancy.listAllowedOrigins = () => Promise.reject(new Error("down"));
    state.stamp = "moved";
    await sleep(40);
    expect(union.has("https://a.example")).toBe(true);
  });
});

describe("crossOriginPath", () => {
  it("keeps the console's routes same-origin", () => {
    expect(crossOriginPath("/v1/feeds/user/a")).toBe(true);
    expect(crossOriginPath("/v1/health")).toBe(true);
    for (const p of ["/operator", "/operator/tenant", "/admin/tenants/:id/origins", "/operator?x=1"]) expect(crossOriginPath(p), p).toBe(false);
    expect(crossOriginPath("/operators-guide")).toBe(true);
    expect(crossOriginPath("/%6Fperator/tenant")).toBe(false);
    expect(crossOriginPath("/%E0%A4%A")).toBe(true);
  });
});
