import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { Code, ConnectError, createClient, createContextValues, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { OperatorService } from "@feeds/proto/feeds/identity/v1/identity";
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
  rootKeys,
  scope,
  signInternalToken,
  tenantKey,
  type Caller,
  type Signer,
} from "../src/index.js";

// The server interceptor every service runs behind: a verified token for this very RPC, signed by
// a process the allow-list (kit/src/call-policy.ts) lets call it; refusals are logged with the
// reason and answered without it.

const log = createLogger({ LOG_LEVEL: "silent" }, "test");
const user: Caller = { kind: "user", userId: "u.1" };
const nowS = () => Math.floor(Date.now() / 1000);

// Services that answer with what the handler was told: "<caller>|<tenant>".
const told = (ctx: HandlerContext) => `${encodeCaller(callerOf(ctx))}|${ctx.values.get(tenantKey) ?? ""}`;
const routes = (router: Parameters<Parameters<typeof createRouterTransport>[0]>[0]) => {
  router.service(TenancyService, {
    getCredential: (_req, ctx) => ({ apiSecret: told(ctx) }),
    getTenant: (_req, ctx) => ({ tenant: { id: told(ctx) } }),
    createTenant: (_req, ctx) => ({ apiSecret: told(ctx) }),
    rotateSecret: (_req, ctx) => ({ apiSecret: told(ctx) }),
  });
  router.service(OperatorService, { ensureStaff: () => ({ created: true }) });
  router.service(Health, { check: () => ({ status: HealthCheckResponse_ServingStatus.SERVING }) });
};

/** Clients of both services, signing as `signer` with `key`'s keys, served behind `serverRoot`'s. */
function as(signer: Signer, key: Buffer, serverRoot: Buffer = key, serverLog = log) {
  const transport = createRouterTransport(routes, {
    router: { interceptors: [createServerInterceptor(serverLog, createInternalAuth(rootKeys(serverRoot)))] },
    transport: { interceptors: [createClientInterceptor(createInternalAuth(rootKeys(key)), signer)] },
  });
  return { tenancy: createClient(TenancyService, transport), operators: createClient(OperatorService, transport) };
}

/** The server's interceptor alone: the client sends exactly the headers the test gives. */
const raw = (serverRoot: Buffer) =>
  createClient(TenancyService, createRouterTransport(routes, { router: { interceptors: [createServerInterceptor(log, createInternalAuth(rootKeys(serverRoot)))] } }));

async function codeOf(p: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await p;
    return "ok";
  } catch (e) {
    return e instanceof ConnectError ? e.code : Code.Unknown;
  }
}

/** A logger whose lines the test reads. */
function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: "warn" }, sink), lines };
}

describe("the server interceptor", () => {
  const root = randomBytes(32);

  it("gives handlers the tenant and caller of a verified token", async () => {
    const c = createClient(TenancyService, createLocalTransport(routes, log, createInternalAuth(rootKeys(root)), "gateway"));
    expect((await c.getCredential({ apiKey: "k" }, scope({ tenantId: "t9", caller: user }))).apiSecret).toBe("user:u.1|t9");
    // A call that names no caller is signed as anonymous, never as system.
    expect((await c.getCredential({ apiKey: "k" })).apiSecret).toBe("anonymous|");
  });

  it("lets the gateway call GetCredential, CreateTenant, RotateSecret and EnsureStaff", async () => {
    const { tenancy, operators } = as("gateway", root);
    const system = scope({ caller: { kind: "system" } });
    expect(await Promise.all([
      codeOf(tenancy.getCredential({ apiKey: "k" }, system)),
      codeOf(tenancy.createTenant({ name: "n" }, system)),
      codeOf(tenancy.rotateSecret({ id: "t" }, system)),
      codeOf(operators.ensureStaff({ email: "a@b.c" }, system)),
    ])).toEqual(["ok", "ok", "ok", "ok"]);
  });

  it("answers PERMISSION_DENIED to a validly signed call from a process the allow-list does not name", async () => {
    for (const signer of ["notification-worker", "feed", "feed-worker", "graph", "engagement", "tenancy"] as const) {
      const { tenancy, operators } = as(signer, root);
      const system = scope({ caller: { kind: "system" } });
      expect(await Promise.all([
        codeOf(tenancy.getCredential({ apiKey: "k" }, system)),
        codeOf(tenancy.createTenant({ name: "n" }, system)),
        codeOf(tenancy.rotateSecret({ id: "t" }, system)),
        codeOf(operators.ensureStaff({ email: "a@b.c" }, system)),
      ]), signer).toEqual([Code.PermissionDenied, Code.PermissionDenied, Code.PermissionDenied, Code.PermissionDenied]);
    }
  });

  it("answers UNAUTHENTICATED to a token minted for another method, replayed on GetCredential", async () => {
    const seen: string[] = [];
    // A client that keeps the token it sent for GetTenant, then sends that token to GetCredential.
    const keeping = createRouterTransport(routes, {
      router: { interceptors: [createServerInterceptor(log, createInternalAuth(rootKeys(root)))] },
      transport: {
        interceptors: [
          createClientInterceptor(createInternalAuth(rootKeys(root)), "gateway"),
          (next) => (req) => {
            seen.push(req.header.get(INTERNAL_AUTH_HEADER) ?? "");
            return next(req);
          },
        ],
      },
    });
    expect(await codeOf(createClient(TenancyService, keeping).getTenant({ id: "t" }))).toBe("ok");
    const replayed = { headers: { [INTERNAL_AUTH_HEADER]: seen[0] as string } };
    expect(await codeOf(raw(root).getTenant({ id: "t" }, replayed))).toBe("ok");
    expect(await codeOf(raw(root).getCredential({ apiKey: "k" }, replayed))).toBe(Code.Unauthenticated);
  });

  it("answers UNAUTHENTICATED without a token, to the old plain headers, and to another root's token", async () => {
    expect(await codeOf(raw(root).getCredential({ apiKey: "k" }))).toBe(Code.Unauthenticated);
    expect(await codeOf(raw(root).getCredential({ apiKey: "k" }, { headers: { "feeds-tenant": "t1", "feeds-caller": "system" } }))).toBe(Code.Unauthenticated);
    const forged = signInternalToken(randomBytes(32), "gateway", "feeds.tenancy.v1.TenancyService/GetCredential", { tenantId: "t1", caller: { kind: "system" } }, nowS() + 30);
    expect(await codeOf(raw(root).getCredential({ apiKey: "k" }, { headers: { [INTERNAL_AUTH_HEADER]: forged } }))).toBe(Code.Unauthenticated);
    expect(await codeOf(as("gateway", randomBytes(32), root).tenancy.getCredential({ apiKey: "k" }))).toBe(Code.Unauthenticated);
  });

  it("logs why it refused, and tells the caller no more than the code", async () => {
    const { log: serverLog, lines } = capturedLog();
    const refusal = (p: Promise<unknown>) => p.then(() => new ConnectError("answered"), (e: unknown) => ConnectError.from(e));
    const denied = await refusal(as("notification-worker", root, root, serverLog).tenancy.getCredential({ apiKey: "k" }));
    const unsigned = await refusal(as("gateway", randomBytes(32), root, serverLog).tenancy.getCredential({ apiKey: "k" }));
    expect([denied.code, denied.rawMessage]).toEqual([Code.PermissionDenied, "internal call not allowed"]);
    expect([unsigned.code, unsigned.rawMessage]).toEqual([Code.Unauthenticated, "internal call not authenticated"]);
    expect(lines.map((l) => [l.msg, l.reason])).toEqual([
      ["internal call refused", "notification-worker may not call feeds.tenancy.v1.TenancyService/GetCredential"],
      ["internal call refused", "bad internal token signature"],
    ]);
  });

  it("leaves grpc.health.v1 Check open for probes", async () => {
    const health = createClient(Health, createRouterTransport(routes, { router: { interceptors: [createServerInterceptor(log, createInternalAuth(rootKeys(root)))] } }));
    expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("refuses in a way the gateway answers as INTERNAL, not as the end client's 401 or 403", async () => {
    expect(fromRpcError(await raw(root).getCredential({ apiKey: "k" }).catch((e: unknown) => e)).code).toBe("INTERNAL");
    expect(fromRpcError(await as("feed", root).tenancy.getCredential({ apiKey: "k" }).catch((e: unknown) => e)).code).toBe("INTERNAL");
  });

  it("has no default caller: a handler reading a caller nobody verified fails", () => {
    const ctx = { values: createContextValues() } as HandlerContext;
    expect(() => callerOf(ctx)).toThrow(expect.objectContaining({ code: "UNAUTHENTICATED" }));
  });
});
