import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowedOriginsVersionKey, createInternalAuth, createLocalTransport, fromRpcError, rootKeys, tenantVersionKey } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { createTenancyModule } from "../src/module.js";

// A tenant's allowed origins: validated again in the service (the gateway checked them first),
// stored deduplicated, and changed like a secret: both stamps the gateways read move, and when the
// signal after the write fails, the change is undone. Real MongoDB-wire storage and Redis.

describe("allowed origins", () => {
  const env = createTestEnv("tenancy_origins", { db: true, redis: true });
  let client: Client<typeof TenancyService>;
  /** Whether Redis writes fail now. */
  let redisFails: () => Promise<boolean> = async () => false;

  beforeAll(async () => {
    await env.open();
    const real = env.redis.redis;
    const flaky = new Proxy(real, {
      get(target, prop) {
        if (prop === "set") {
          return async (...args: unknown[]) => {
            if (await redisFails()) throw new Error("connect ECONNREFUSED (redis is down)");
            return (target.set as (...a: unknown[]) => Promise<unknown>)(...args);
          };
        }
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const module = await createTenancyModule({ db: env.db, redis: { ...env.redis, redis: flaky }, masterKey: randomBytes(32), log: env.log });
    client = createClient(TenancyService, createLocalTransport((r) => module.routes(r), env.log, createInternalAuth(rootKeys(randomBytes(32))), "gateway"));
  });
  afterAll(env.close);

  const newTenant = async () => (await client.createTenant({ name: `t-${randomBytes(3).toString("hex")}` })).tenant?.id ?? "";
  const originsOf = async (id: string) =>
    (await env.db.collection<{ _id: string; allowed_origins?: string[] }>("tenants").findOne({ _id: id }))?.allowed_origins ?? [];
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: unknown) => fromRpcError(e),
    );

  it("stores them deduplicated, moves both stamps, and the union lists them", async () => {
    const id = await newTenant();
    const stamps = async () => [await env.redis.redis.get(tenantVersionKey(env.redis, id)), await env.redis.redis.get(allowedOriginsVersionKey(env.redis))];
    const before = await stamps();
    const a = `https://a-${id}.example`;
    const res = await client.setAllowedOrigins({ id, origins: [a, "http://localhost:3000", a] });
    expect(res.tenant?.allowedOrigins).toEqual([a, "http://localhost:3000"]);
    const after = await stamps();
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
    expect((await client.getTenant({ id })).tenant?.allowedOrigins).toEqual([a, "http://localhost:3000"]);
    expect((await client.listAllowedOrigins({})).origins).toEqual(expect.arrayContaining([a, "http://localhost:3000"]));
    expect((await client.getTenant({ id: await newTenant() })).tenant?.allowedOrigins).toEqual([]);
  });

  it("refuses more than 20 and anything but an exact origin, naming the field, storing nothing", async () => {
    const id = await newTenant();
    const many = await failure(client.setAllowedOrigins({ id, origins: Array.from({ length: 21 }, (_, i) => `https://a${i}.example`) }));
    expect(many?.code).toBe("VALIDATION_FAILED");
    expect(many?.fields?.map((f) => f.path)).toEqual(["origins"]);
    const bad = await failure(client.setAllowedOrigins({ id, origins: ["https://ok.example", "https://ok.example/", "null", "https://ok.example"] }));
    expect(bad?.fields?.map((f) => f.path)).toEqual(["origins.1", "origins.2"]);
    expect((await client.getTenant({ id })).tenant?.allowedOrigins).toEqual([]);
    expect((await failure(client.setAllowedOrigins({ id: "t_nosuch", origins: [] })))?.code).toBe("NOT_FOUND");
  });

  it.each([
    ["Redis down", async () => true],
    ["Redis fails once the new list is stored", async (id: string) => !(await originsOf(id)).includes("https://kept.example")],
  ] as const)("%s: INTERNAL, and the list stays what it was", async (_name, fails) => {
    const id = await newTenant();
    await client.setAllowedOrigins({ id, origins: ["https://kept.example"] });
    redisFails = () => fails(id);
    try {
      expect((await failure(client.setAllowedOrigins({ id, origins: ["https://new.example"] })))?.code).toBe("INTERNAL");
    } finally {
      redisFails = async () => false;
    }
    expect(await originsOf(id)).toEqual(["https://kept.example"]);
  });
});
