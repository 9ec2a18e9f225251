import { createHmac, randomBytes } from "node:crypto";
import { Code, ConnectError, createClient, createContextValues, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import {
  callerOf,
  createClientInterceptor,
  createInternalAuth,
  createLocalTransport,
  createLogger,
  createServerInterceptor,
  encodeCaller,
  fromRpcError,
  INTERNAL_AUTH_HEADER,
  scope,
  signInternalToken,
  tenantKey,
  TOKEN_TTL_S,
  type Caller,
  type InternalClaims,
} from "../src/index.js";

const log = createLogger({ LOG_LEVEL: "silent" }, "test");
const user: Caller = { kind: "user", userId: "u.1" };
const claims: InternalClaims = { tenantId: "t1", caller: user };
const nowS = () => Math.floor(Date.now() / 1000);

// A service that answers with what its handler was told: "<caller>|<tenant>".
const routes = (router: Parameters<Parameters<typeof createRouterTransport>[0]>[0]) => {
  router.service(TenancyService, {
    getCredential: (_req, ctx) => ({ apiSecret: `${encodeCaller(callerOf(ctx))}|${ctx.values.get(tenantKey) ?? ""}` }),
  });
  router.service(Health, { check: () => ({ status: HealthCheckResponse_ServingStatus.SERVING }) });
};

/** The server's interceptor alone: the client sends exactly the headers the test gives. */
function rawClient(serverKey: Buffer) {
  return createClient(TenancyService, createRouterTransport(routes, { router: { interceptors: [createServerInterceptor(log, createInternalAuth(serverKey))] } }));
}

async function codeOf(p: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await p;
    return "ok";
  } catch (e) {
    return e instanceof ConnectError ? e.code : Code.Unknown;
  }
}

describe("internal tokens", () => {
  const key = randomBytes(32);
  const auth = createInternalAuth(key);

  it("verify what they signed: tenant and caller, for every caller kind", () => {
    const callers: Caller[] = [{ kind: "system" }, { kind: "server" }, { kind: "anonymous" }, user, { kind: "operator", operatorId: "o1" }];
    for (const caller of callers) expect(auth.verify(auth.sign({ tenantId: "t1", caller }))).toEqual({ tenantId: "t1", caller });
    expect(auth.verify(auth.sign({ tenantId: undefined, caller: { kind: "system" } }))).toEqual({ tenantId: undefined, caller: { kind: "system" } });
  });

  it("refuse a missing, forged, tampered, expired, too long-lived or malformed token", () => {
    const valid = auth.sign(claims);
    const [v, , mac] = valid.split(".");
    const payloadOf = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const cases: [string | null, string][] = [
      [null, "no internal token"],
      [signInternalToken(randomBytes(32), claims, nowS() + 30), "bad internal token signature"],
      [`${v}.${payloadOf({ t: "t2", c: "system", e: nowS() + 30 })}.${mac}`, "bad internal token signature"],
      [signInternalToken(key, claims, nowS() - 6), "expired internal token"],
      [signInternalToken(key, claims, nowS() + TOKEN_TTL_S + 60), "internal token lives too long"],
      ["v1.abc", "malformed internal token"],
      [`v0.${valid.slice(3)}`, "malformed internal token"],
      ["x".repeat(5000), "malformed internal token"],
    ];
    for (const [token, refused] of cases) expect(auth.verify(token)).toEqual({ refused });
    // Signed with the key, but naming no caller, or one of no known kind.
    const signedPayload = (o: object) => {
      const signed = `v1.${payloadOf(o)}`;
      return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
    };
    expect(auth.verify(signedPayload({ t: "t1", e: nowS() + 30 }))).toEqual({ refused: "internal token names no caller" });
    expect(auth.verify(signedPayload({ t: "t1", c: "root", e: nowS() + 30 }))).toEqual({ refused: "internal token names no caller" });
    expect(auth.verify(signedPayload({ t: "t1", c: "user:", e: nowS() + 30 }))).toEqual({ refused: "internal token names no caller" });
    expect(auth.verify(signedPayload({ t: 7, c: "system", e: nowS() + 30 }))).toEqual({ refused: "malformed internal token" });
  });

  it("accept a token up to 5 seconds past its expiry (clock skew)", () => {
    expect(auth.verify(signInternalToken(key, claims, nowS() - 4))).toEqual(claims);
  });

  it("still expire once verified and remembered", () => {
    let t = 1_000_000;
    const clocked = createInternalAuth(key, () => t);
    const token = clocked.sign(claims);
    expect(clocked.verify(token)).toEqual(claims);
    t += TOKEN_TTL_S + 5;
    expect(clocked.verify(token)).toEqual(claims);
    t += 1;
    expect(clocked.verify(token)).toEqual({ refused: "expired internal token" });
  });

  it("are reused while half their lifetime remains, then signed anew", () => {
    let t = 1_000_000;
    const clocked = createInternalAuth(key, () => t);
    const first = clocked.sign(claims);
    t += 29;
    expect(clocked.sign(claims)).toBe(first);
    expect(clocked.sign({ tenantId: "t1", caller: { kind: "server" } })).not.toBe(first);
    t += 1;
    const second = clocked.sign(claims);
    expect(second).not.toBe(first);
    expect(clocked.verify(second)).toEqual(claims);
  });
});

describe("the server interceptor", () => {
  const key = randomBytes(32);

  it("gives handlers the tenant and caller of a verified token", async () => {
    const c = createClient(TenancyService, createLocalTransport(routes, log, createInternalAuth(key)));
    expect((await c.getCredential({ apiKey: "k" }, scope({ tenantId: "t9", caller: user }))).apiSecret).toBe("user:u.1|t9");
    // A call that names no caller is signed as anonymous, never as system.
    expect((await c.getCredential({ apiKey: "k" })).apiSecret).toBe("anonymous|");
  });

  it("answers UNAUTHENTICATED without a token, to the old plain headers, and to another key's token", async () => {
    const raw = rawClient(key);
    expect(await codeOf(raw.getCredential({ apiKey: "k" }))).toBe(Code.Unauthenticated);
    expect(await codeOf(raw.getCredential({ apiKey: "k" }, { headers: { "feeds-tenant": "t1", "feeds-caller": "system" } }))).toBe(Code.Unauthenticated);
    const forged = signInternalToken(randomBytes(32), { tenantId: "t1", caller: { kind: "system" } }, nowS() + 30);
    expect(await codeOf(raw.getCredential({ apiKey: "k" }, { headers: { [INTERNAL_AUTH_HEADER]: forged } }))).toBe(Code.Unauthenticated);
    // A signing client whose key differs from the server's.
    const other = createClient(
      TenancyService,
      createRouterTransport(routes, {
        router: { interceptors: [createServerInterceptor(log, createInternalAuth(key))] },
        transport: { interceptors: [createClientInterceptor(createInternalAuth(randomBytes(32)))] },
      }),
    );
    expect(await codeOf(other.getCredential({ apiKey: "k" }, scope({ caller: { kind: "system" } })))).toBe(Code.Unauthenticated);
  });

  it("leaves grpc.health.v1 Check open for probes", async () => {
    const health = createClient(Health, createRouterTransport(routes, { router: { interceptors: [createServerInterceptor(log, createInternalAuth(key))] } }));
    expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("refuses in a way the gateway answers as INTERNAL, not as the end client's 401", async () => {
    const e = await rawClient(key).getCredential({ apiKey: "k" }).catch((err: unknown) => err);
    expect(fromRpcError(e).code).toBe("INTERNAL");
  });

  it("has no default caller: a handler reading a caller nobody verified fails", () => {
    const ctx = { values: createContextValues() } as HandlerContext;
    expect(() => callerOf(ctx)).toThrow(expect.objectContaining({ code: "UNAUTHENTICATED" }));
  });
});
