import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { callKeyOf, callersOf, INTERNAL_AUTH_HEADER, signingKeyOf, signInternalToken, type InternalClaims, type ServiceName, type Signer } from "@feeds/kit";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { OperatorService, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import type { RunningSystem } from "../../scripts/lib/system.mjs";
import { http, uniqueEmail } from "../support/api.js";
import { startOwnSystem, type OwnSystem } from "../support/own-system.js";

// Split mode, workers in processes of their own: every service listens on the network, so each
// must refuse a call unless its token was signed by a process the allow-list lets call that very
// RPC, whatever headers it sends. The test holds the root and mints tokens as any process would.

const nowS = () => Math.floor(Date.now() / 1000);
const nameOf = (m: DescMethod) => `${m.parent.typeName}/${m.name}`;
const M = {
  getCredential: TenancyService.method.getCredential,
  getTenant: TenancyService.method.getTenant,
  createTenant: TenancyService.method.createTenant,
  rotateSecret: TenancyService.method.rotateSecret,
  ensureStaff: OperatorService.method.ensureStaff,
  getUsers: UserService.method.getUsers,
  copyHistory: FeedService.method.copyHistory,
};
const audienceOf: Record<string, ServiceName> = { [TenancyService.typeName]: "tenancy", [OperatorService.typeName]: "identity", [UserService.typeName]: "identity", [FeedService.typeName]: "feed" };

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
  const root = randomBytes(32);
  const asSystem: InternalClaims = { tenantId: undefined, caller: { kind: "system" } };
  let own: OwnSystem;
  let system: RunningSystem;
  let tenant: { id: string; apiKey: string; apiSecret: string };

  /** A token of `signer` for `method`, made with the key that process holds (derived from the root). */
  const tokenOf = (signer: Signer, method: DescMethod, claims = asSystem, expiresAt = nowS() + 30) =>
    signInternalToken(callKeyOf(signingKeyOf(root, signer), audienceOf[method.parent.typeName] as ServiceName), signer, nameOf(method), claims, expiresAt);
  const headers = (token: string) => ({ headers: { [INTERNAL_AUTH_HEADER]: token } });
  const as = (signer: Signer, method: DescMethod) => headers(tokenOf(signer, method));

  beforeAll(async () => {
    // The test holds the root every process's key derives from, to mint tokens as they would.
    own = await startOwnSystem("internal-auth", { split: true, workers: true, env: { FEEDS_INTERNAL_KEY: root.toString("base64") } });
    ({ system, tenant } = own);
  });

  afterAll(async () => {
    await own?.stop();
  });

  const grpc = (name: "TENANCY_URL" | "IDENTITY_URL" | "FEED_URL") => {
    const baseUrl = system.urls[name];
    if (!baseUrl) throw new Error(`the split system names no ${name}`);
    return createGrpcTransport({ baseUrl, httpVersion: "2" } as Parameters<typeof createGrpcTransport>[0]);
  };
  const tenancy = () => createClient(TenancyService, grpc("TENANCY_URL"));
  const operators = () => createClient(OperatorService, grpc("IDENTITY_URL"));
  const users = () => createClient(UserService, grpc("IDENTITY_URL"));
  const feed = () => createClient(FeedService, grpc("FEED_URL"));

  /** The sensitive calls, each with the token `token(method)` gives. */
  const sensitive = (token: (m: DescMethod) => string) => [
    codeOf(tenancy().getCredential({ apiKey: tenant.apiKey }, headers(token(M.getCredential)))),
    codeOf(tenancy().createTenant({ name: "intruder" }, headers(token(M.createTenant)))),
    codeOf(tenancy().rotateSecret({ id: tenant.id }, headers(token(M.rotateSecret)))),
    codeOf(operators().ensureStaff({ email: uniqueEmail("intruder"), name: "Intruder", password: "a long enough password" }, headers(token(M.ensureStaff)))),
  ];
  const four = (code: Code) => [code, code, code, code];

  it("a token the gateway minted for GetTenant is refused on GetCredential (and still works on GetTenant)", async () => {
    const forGetTenant = tokenOf("gateway", M.getTenant);
    expect(await codeOf(tenancy().getTenant({ id: tenant.id }, headers(forGetTenant)))).toBe("ok");
    expect(await codeOf(tenancy().getCredential({ apiKey: tenant.apiKey }, headers(forGetTenant)))).toBe(Code.Unauthenticated);
    expect(await codeOf(operators().ensureStaff({ email: uniqueEmail("x"), name: "X", password: "a long enough password" }, headers(forGetTenant)))).toBe(Code.Unauthenticated);
  });

  it("the notification worker's identity is refused on GetCredential, CreateTenant, RotateSecret and EnsureStaff", async () => {
    // Neither tenancy nor identity holds a key for it: no token it can make verifies there.
    expect(await Promise.all(sensitive((m) => tokenOf("notification-worker", m)))).toEqual(four(Code.Unauthenticated));
  });

  it("a process a service does hold a key for, calling an RPC the allow-list keeps from it, is refused PERMISSION_DENIED", async () => {
    // Identity verifies feed's tokens (feed reads users) but lets it reach no operator RPC.
    const withTenant = headers(tokenOf("feed", M.getUsers, { tenantId: tenant.id, caller: { kind: "system" } }));
    expect(await codeOf(users().getUsers({ ids: ["u1"] }, withTenant))).toBe("ok");
    expect(await codeOf(operators().ensureStaff({ email: uniqueEmail("feed"), name: "F", password: "a long enough password" }, as("feed", M.ensureStaff)))).toBe(Code.PermissionDenied);
    // Feed verifies engagement's tokens, but only graph may have it copy history.
    expect(await codeOf(feed().copyHistory({}, as("engagement", M.copyHistory)))).toBe(Code.PermissionDenied);
  });

  it("the gateway's identity is allowed all four", async () => {
    const cred = await tenancy().getCredential({ apiKey: tenant.apiKey }, as("gateway", M.getCredential));
    expect(cred.apiSecret).toBe(tenant.apiSecret);
    const other = await tenancy().createTenant({ name: "made-by-the-gateway" }, as("gateway", M.createTenant));
    const rotated = await tenancy().rotateSecret({ id: other.tenant?.id ?? "" }, as("gateway", M.rotateSecret));
    expect(rotated.apiSecret).not.toBe(other.apiSecret);
    const staffed = await operators().ensureStaff({ email: uniqueEmail("staff"), name: "Staff", password: "a long enough password" }, as("gateway", M.ensureStaff));
    expect(staffed.created).toBe(true);
  });

  it("without a token, to the old plain headers, another root's token, an expired or long-lived one, or rewritten claims: UNAUTHENTICATED", async () => {
    const bogus = randomBytes(32);
    const foreign = (m: DescMethod) => signInternalToken(callKeyOf(signingKeyOf(bogus, "gateway"), "tenancy"), "gateway", nameOf(m), asSystem, nowS() + 30);
    expect(await Promise.all(sensitive(() => ""))).toEqual(four(Code.Unauthenticated));
    expect(await Promise.all(sensitive(foreign))).toEqual(four(Code.Unauthenticated));
    expect(await Promise.all(sensitive((m) => tokenOf("gateway", m, asSystem, nowS() - 60)))).toEqual(four(Code.Unauthenticated));
    expect(await Promise.all(sensitive((m) => tokenOf("gateway", m, asSystem, nowS() + 3600)))).toEqual(four(Code.Unauthenticated));
    const plain = { headers: { "feeds-tenant": tenant.id, "feeds-caller": "system", "feeds-request-id": "r1" } };
    expect(await codeOf(tenancy().getCredential({ apiKey: tenant.apiKey }, plain))).toBe(Code.Unauthenticated);
    // A worker's valid token with the signer renamed to the gateway.
    const renamed = (m: DescMethod) => tokenOf("feed-worker", m).replace(".feed-worker.", ".gateway.");
    expect(await Promise.all(sensitive(renamed))).toEqual(four(Code.Unauthenticated));
  });

  it("grpc.health.v1 Check stays open for probes", async () => {
    const health = createClient(Health, grpc("TENANCY_URL"));
    expect((await health.check({ service: "" }, { timeoutMs: 5000 })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("each process holds only its own keys: no root anywhere, the master key in tenancy, no service key in the notify worker, the webhook key only where notification runs", async () => {
    const env = (pid: number) => Object.fromEntries(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean).map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
    const given = Object.fromEntries(
      system.processes.map((p) => {
        const e = env(p.child.pid as number);
        const callers = e.FEEDS_CALLER_KEYS?.split(",").map((c) => c.split(":")[0]);
        return [p.name, { root: "FEEDS_INTERNAL_KEY" in e, master: "FEEDS_MASTER_KEY" in e, webhook: "FEEDS_WEBHOOK_KEY" in e, own: "FEEDS_SERVICE_KEY" in e, callers }];
      }),
    );
    const allowed = callersOf();
    const service = (s: ServiceName, own: boolean) => ({ root: false, master: s === "tenancy", webhook: s === "notification", own, callers: allowed.get(s) });
    expect(given).toEqual({
      tenancy: service("tenancy", false),
      identity: service("identity", false),
      feed: service("feed", true),
      graph: service("graph", true),
      engagement: service("engagement", true),
      notification: service("notification", true),
      catalog: service("catalog", false),
      "fanout-worker": { root: false, master: false, webhook: false, own: true, callers: undefined },
      "follow-worker": { root: false, master: false, webhook: false, own: true, callers: undefined },
      "notify-worker": { root: false, master: false, webhook: true, own: false, callers: undefined },
      gateway: { root: false, master: false, webhook: false, own: true, callers: undefined },
    });
    expect(allowed.get("tenancy")).toEqual(["gateway"]);
    expect(allowed.get("identity")).toEqual(["gateway", "feed", "feed-worker", "notification"]);
  });

  it("and the system works through the gateway, every call signed as the process that makes it", async () => {
    // A server token: the gateway asks tenancy for the decrypted secret, then identity stores the
    // user; feed, graph and catalog answer a read of a timeline; a follow's history copy goes
    // graph worker → feed, an activity's fan-out feed worker → graph and identity.
    const token = await createServerToken(tenant.apiKey, tenant.apiSecret);
    expect((await http("PUT", "/v1/users/u1", { url: system.url, token, body: { custom: {} } })).status).toBe(201);
    expect((await http("POST", "/v1/feeds/timeline/u2/follows", { url: system.url, token, body: { target: "user:u1" } })).status).toBe(201);
    const added = await http("POST", "/v1/feeds/user/u1/activities", { url: system.url, token, body: { actor: "user:u1", verb: "post", object: "note:1" } });
    expect(added.status).toBe(201);
    let seen: string[] = [];
    for (let i = 0; i < 100 && !seen.includes(added.body.id); i++) {
      const page = await http("GET", "/v1/feeds/timeline/u2", { url: system.url, token });
      expect(page.status).toBe(200);
      seen = (page.body.results as { id: string }[]).map((a) => a.id);
      if (!seen.includes(added.body.id)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen).toContain(added.body.id);
  });
});
