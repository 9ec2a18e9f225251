import { randomBytes } from "node:crypto";
import { createClient, type Client, type ConnectRouter } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, fromRpcError, tenantVersionKey, seal, unseal, type Sealed, rootKeys } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { TenancyService, TenantStatus } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { createTenancyModule } from "../src/module.js";
import { createTenantRepository } from "../src/tenant-repository.js";
import { createCredentialChanges } from "../src/credential-change.js";
import { createTenancyService } from "../src/routes.js";

// Secret rotation and status changes when Redis (the change signal every gateway replica reads)
// fails: either the caller gets the change or nothing changed. Real MongoDB-wire storage and
// real Redis, in a namespace of their own removed afterwards; the Redis client handed to the
// service fails its writes on cue, as a Redis that went down would. Concurrent changes of one
// tenant race for real (no lock: each applies only to the state it read).

const masterKey = randomBytes(32);

interface TenantRow {
  _id: string;
  secret: Sealed;
  status: string;
  updated_at: Date;
}

describe("credential changes when Redis fails", () => {
  const env = createTestEnv("tenancy_cc", { db: true, redis: true });
  const { log } = env;
  /** When Redis writes fail: never, always (down), or once the tenant's row differs from `original`. */
  let redisFails: "never" | "always" | "after the write" = "never";
  let original: TenantRow | null = null;
  let client: Client<typeof TenancyService>;

  const row = (id: string) => env.db.collection<TenantRow>("tenants").findOne({ _id: id });
  const secretOf = (r: TenantRow | null) => (r ? unseal(masterKey, r.secret, `tenant:${r._id}`) : null);
  const transportOf = (routes: (router: ConnectRouter) => void) =>
    createLocalTransport(routes, log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");

  beforeAll(async () => {
    await env.open();
    const { db, redis } = env;
    const real = redis.redis;
    const failing = async () => {
      if (redisFails === "always") return true;
      if (redisFails === "never" || !original) return false;
      const now = await row(original._id);
      return secretOf(now) !== secretOf(original) || now?.status !== original.status;
    };
    const flaky = new Proxy(real, {
      get(target, prop) {
        if (prop === "set") {
          return async (...args: unknown[]) => {
            if (await failing()) throw new Error("connect ECONNREFUSED (redis is down)");
            return (target.set as (...a: unknown[]) => Promise<unknown>)(...args);
          };
        }
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const module = await createTenancyModule({ db, redis: { ...redis, redis: flaky }, masterKey, log });
    client = createClient(TenancyService, transportOf((router) => module.routes(router)));
  });

  afterAll(env.close);

  async function newTenant() {
    redisFails = "never";
    const res = await client.createTenant({ name: `t-${randomBytes(3).toString("hex")}` });
    const id = res.tenant?.id ?? "";
    original = await row(id);
    return { id, apiKey: res.tenant?.apiKey ?? "", secret: res.apiSecret };
  }
  const codeOf = (p: Promise<unknown>) =>
    p.then(
      () => "OK",
      (e: unknown) => fromRpcError(e).code,
    );

  it("Redis down: rotation answers INTERNAL and changes nothing", async () => {
    const t = await newTenant();
    redisFails = "always";
    expect(await codeOf(client.rotateSecret({ id: t.id }))).toBe("INTERNAL");
    expect(secretOf(await row(t.id))).toBe(t.secret);
  });

  it("Redis fails once the new secret is stored: rotation answers INTERNAL and the old secret is back", async () => {
    const t = await newTenant();
    redisFails = "after the write";
    expect(await codeOf(client.rotateSecret({ id: t.id }))).toBe("INTERNAL");
    const now = await row(t.id);
    expect(secretOf(now)).toBe(t.secret);
    expect(now?.updated_at).toEqual(original?.updated_at);
  });

  it("Redis fails once the status is stored: suspension answers INTERNAL and the tenant stays active", async () => {
    const t = await newTenant();
    redisFails = "after the write";
    expect(await codeOf(client.setTenantStatus({ id: t.id, status: TenantStatus.SUSPENDED }))).toBe("INTERNAL");
    expect((await row(t.id))?.status).toBe("active");
    expect((await client.getTenant({ id: t.id })).tenant?.status).toBe(TenantStatus.ACTIVE);
  });

  it("Redis up: rotation answers the new secret, stores it, and moves the version stamp", async () => {
    const t = await newTenant();
    const { redis } = env;
    const stamp = await redis.redis.get(tenantVersionKey(redis, t.id));
    const res = await client.rotateSecret({ id: t.id });
    expect(res.apiSecret).not.toBe(t.secret);
    expect(secretOf(await row(t.id))).toBe(res.apiSecret);
    expect(await redis.redis.get(tenantVersionKey(redis, t.id))).not.toBe(stamp);
  });

  it("a rotation that can be neither signalled nor undone answers the secret it stored", async () => {
    const t = await newTenant();
    const tenants = createTenantRepository(env.db);
    const changes = createCredentialChanges({
      tenants: { ...tenants, undo: () => Promise.reject(new Error("storage went away too")) },
      signalChange: async () => {
        if (secretOf(await row(t.id)) !== t.secret) throw new Error("redis is down");
      },
      log,
    });
    const svc = createTenancyService({ tenants, masterKey, changes });
    const direct = createClient(TenancyService, transportOf((router) => router.service(TenancyService, svc)));
    const res = await direct.rotateSecret({ id: t.id });
    expect(res.apiSecret).not.toBe(t.secret);
    expect(secretOf(await row(t.id))).toBe(res.apiSecret);
  });

  it("concurrent rotations all answer, one after the other: the stored secret is one of those handed back", async () => {
    const t = await newTenant();
    const answers = await Promise.all(Array.from({ length: 5 }, () => client.rotateSecret({ id: t.id })));
    const secrets = answers.map((a) => a.apiSecret);
    expect(new Set(secrets).size).toBe(5);
    expect(secrets).toContain(secretOf(await row(t.id)));
  });

  it("a change decided on a state another change replaced applies after it, and undoes only itself", async () => {
    const t = await newTenant();
    const tenants = createTenantRepository(env.db);
    const sealed = (secret: string) => seal(masterKey, secret, `tenant:${t.id}`);
    // A rotates while B has read the tenant (B's first signal waits for A's whole change).
    let aDone!: () => void;
    const aFinished = new Promise<void>((r) => (aDone = r));
    const a = createCredentialChanges({ tenants, signalChange: async () => undefined, log });
    let bSignals = 0;
    const b = createCredentialChanges({
      tenants,
      log,
      signalChange: async () => {
        if (bSignals++ === 0) await aFinished;
        // The signal after B's own write fails: B's secret is stored.
        if (secretOf(await row(t.id)) === "secret-b") throw new Error("redis is down");
      },
    });
    const bAnswer = codeOf(b.apply(t.id, { secret: sealed("secret-b") }));
    await new Promise((r) => setTimeout(r, 50));
    await a.apply(t.id, { secret: sealed("secret-a") });
    aDone();
    expect(await bAnswer).toBe("INTERNAL");
    // A's caller holds secret-a: B's undo put back A's secret, not the one B had read.
    expect(secretOf(await row(t.id))).toBe("secret-a");
  });
});
