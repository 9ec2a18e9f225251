import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerToken } from "@feeds/sdk";
import { INTERNAL_AUTH_HEADER, signInternalToken, type InternalClaims } from "@feeds/kit";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { OperatorService } from "@feeds/proto/feeds/identity/v1/identity";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newIp, uniqueEmail } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";

// Split mode: every service listens on the network, so each must refuse callers that do not
// hold the internal key, whatever headers they send.

const nowS = () => Math.floor(Date.now() / 1000);
const sign = (key: Buffer, claims: InternalClaims, expiresAt = nowS() + 30) => ({ [INTERNAL_AUTH_HEADER]: signInternalToken(key, claims, expiresAt) });

async function codeOf(p: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await p;
    return "ok";
  } catch (e) {
    if (e instanceof ConnectError) return e.code;
    throw e;
  }
}

describe("service-to-service calls in split mode", () => {
  const internalKey = randomBytes(32);
  const namespace = newNamespace("internal");
  const staff = { email: `staff@${namespace.replace(/_/g, "-")}.test`, password: randomBytes(16).toString("base64url") };
  let infra: Awaited<ReturnType<typeof testInfra>>;
  let system: RunningSystem;
  let tenant: { id: string; apiKey: string; apiSecret: string };

  beforeAll(async () => {
    infra = await testInfra();
    system = await startSystem({
      split: true,
      env: {
        ...infra.env,
        FEEDS_INTERNAL_KEY: internalKey.toString("base64"),
        FEEDS_NAMESPACE: namespace,
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "error",
      },
    });
    const login = await http("POST", "/operator/login", { url: system.url, ip: newIp(), body: staff });
    expect(login.status).toBe(200);
    const created = await http("POST", "/admin/tenants", { url: system.url, token: login.body.token, body: { name: "internal-auth" } });
    expect(created.status).toBe(201);
    tenant = { id: created.body.tenant.id, apiKey: created.body.tenant.api_key, apiSecret: created.body.api_secret };
  });

  afterAll(async () => {
    await system?.stop();
    if (infra) await dropNamespace(namespace, infra);
  });

  const grpc = (name: "TENANCY_URL" | "IDENTITY_URL") => {
    const baseUrl = system.urls[name];
    if (!baseUrl) throw new Error(`the split system names no ${name}`);
    return createGrpcTransport({ baseUrl, httpVersion: "2" } as Parameters<typeof createGrpcTransport>[0]);
  };
  const tenancy = () => createClient(TenancyService, grpc("TENANCY_URL"));
  const identity = () => createClient(OperatorService, grpc("IDENTITY_URL"));
  const asSystem = { tenantId: undefined, caller: { kind: "system" } } as const;

  /** Both calls a network neighbour would want: any tenant's secret, and a staff operator. */
  const attempts = (headers: Record<string, string>) => [
    codeOf(tenancy().getCredential({ apiKey: tenant.apiKey }, { headers })),
    codeOf(identity().ensureStaff({ email: uniqueEmail("intruder"), name: "Intruder", password: "a long enough password" }, { headers })),
  ];

  it("GetCredential and EnsureStaff answer UNAUTHENTICATED without a token", async () => {
    expect(await Promise.all(attempts({}))).toEqual([Code.Unauthenticated, Code.Unauthenticated]);
  });

  it("... and to the old plain tenant and caller headers", async () => {
    const plain = { "feeds-tenant": tenant.id, "feeds-caller": "system", "feeds-request-id": "r1" };
    expect(await Promise.all(attempts(plain))).toEqual([Code.Unauthenticated, Code.Unauthenticated]);
  });

  it("... and to a token signed with another key", async () => {
    expect(await Promise.all(attempts(sign(randomBytes(32), asSystem)))).toEqual([Code.Unauthenticated, Code.Unauthenticated]);
  });

  it("... and to an expired token, and to one that claims a long life", async () => {
    expect(await Promise.all(attempts(sign(internalKey, asSystem, nowS() - 60)))).toEqual([Code.Unauthenticated, Code.Unauthenticated]);
    expect(await Promise.all(attempts(sign(internalKey, asSystem, nowS() + 3600)))).toEqual([Code.Unauthenticated, Code.Unauthenticated]);
  });

  it("... and to a valid token whose claims were rewritten", async () => {
    const valid = signInternalToken(internalKey, { tenantId: tenant.id, caller: { kind: "anonymous" } }, nowS() + 30);
    const [v, , mac] = valid.split(".");
    const claimed = Buffer.from(JSON.stringify({ c: "system", e: nowS() + 30 })).toString("base64url");
    expect(await Promise.all(attempts({ [INTERNAL_AUTH_HEADER]: `${v}.${claimed}.${mac}` }))).toEqual([Code.Unauthenticated, Code.Unauthenticated]);
  });

  it("with a correctly signed token both answer (the refusals above are the token's doing)", async () => {
    const cred = await tenancy().getCredential({ apiKey: tenant.apiKey }, { headers: sign(internalKey, asSystem) });
    expect(cred.apiSecret).toBe(tenant.apiSecret);
    const staffed = await identity().ensureStaff({ email: uniqueEmail("staff"), name: "Staff", password: "a long enough password" }, { headers: sign(internalKey, asSystem) });
    expect(staffed.created).toBe(true);
  });

  it("grpc.health.v1 Check stays open for probes", async () => {
    const health = createClient(Health, grpc("TENANCY_URL"));
    expect((await health.check({ service: "" }, { timeoutMs: 5000 })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("only the tenancy process is given FEEDS_MASTER_KEY, only notification FEEDS_WEBHOOK_KEY, and the system works through the gateway", async () => {
    const given = Object.fromEntries(
      system.processes.map((p) => {
        const environ = readFileSync(`/proc/${p.child.pid}/environ`, "utf8").split("\0");
        const has = (variable: string) => environ.some((e) => e.startsWith(`${variable}=`));
        return [p.name, { master: has("FEEDS_MASTER_KEY"), webhook: has("FEEDS_WEBHOOK_KEY"), internal: has("FEEDS_INTERNAL_KEY") }];
      }),
    );
    expect(given).toEqual({
      tenancy: { master: true, webhook: false, internal: true },
      identity: { master: false, webhook: false, internal: true },
      feed: { master: false, webhook: false, internal: true },
      graph: { master: false, webhook: false, internal: true },
      engagement: { master: false, webhook: false, internal: true },
      notification: { master: false, webhook: true, internal: true },
      catalog: { master: false, webhook: false, internal: true },
      gateway: { master: false, webhook: false, internal: true },
    });
    // A server token: the gateway (no master key) asks tenancy for the decrypted secret, then
    // identity stores the user; feed, graph and catalog answer a read of a timeline.
    const token = await createServerToken(tenant.apiKey, tenant.apiSecret);
    expect((await http("PUT", "/v1/users/u1", { url: system.url, token, body: { custom: {} } })).status).toBe(201);
    expect((await http("GET", "/v1/feeds/timeline/u1", { url: system.url, token })).status).toBe(200);
  });
});
