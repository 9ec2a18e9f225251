import { Writable } from "node:stream";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import Fastify, { type FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import {
  FeedsError,
  createClientInterceptor,
  createInternalAuth,
  createServerInterceptor,
  forbidden,
  rateLimited,
  requestIdKey,
  rootKeys,
  scope,
  type Config,
} from "@feeds/kit";
import { installAccessLog, installErrorHandling, installRequestIds, requestIdOf, serverOptions } from "../src/http.js";

// X-Request-Id both ways (contract section 6): a client's well-formed id becomes the request's
// id, is echoed on every answer and envelope, names every log line of the request, and travels
// to the services; any other value is replaced.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("requestIdOf", () => {
  it("takes 1 to 128 characters of [A-Za-z0-9._:-] as they are", () => {
    for (const id of ["a", "x".repeat(128), "abc-123_DEF.x:y", "__proto__", "constructor", "0"]) {
      expect(requestIdOf({ headers: { "x-request-id": id } })).toBe(id);
    }
  });

  it("replaces anything else with a fresh UUID", () => {
    const hostile = ["", "x".repeat(129), "a b", "a\r\nset-cookie: x=1", "caf\u00e9", "\u{1F600}", "a/b", "a,b", "a, a", "<script>", "a;b"];
    const ids = hostile.map((h) => requestIdOf({ headers: { "x-request-id": h } }));
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
    expect(requestIdOf({ headers: {} })).toMatch(UUID);
    expect(requestIdOf({ headers: { "x-request-id": ["a", "b"] } })).toMatch(UUID);
  });
});

/** A gateway-shaped app (the real server options, request ids and error handling) logging to `lines`. */
function appWithLog(lines: Record<string, unknown>[]): FastifyInstance {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const log = pino({ level: "info" }, sink);
  const config = { TRUST_PROXY: "", REQUEST_TIMEOUT_MS: 30_000, REQUEST_HEADERS_TIMEOUT_MS: 10_000 } as unknown as Config;
  const app = Fastify(serverOptions(config, log));
  installRequestIds(app);
  installAccessLog(app, log, (req) => (req.headers["x-test-tenant"] === "t1" ? "t_1" : undefined));
  installErrorHandling(app, log);
  app.get("/ok", async () => ({ ok: true }));
  app.get("/items/:id", async () => ({ ok: true }));
  app.get("/boom", async () => {
    throw new Error("a bug");
  });
  app.get("/refused", async () => {
    throw forbidden("tenant suspended");
  });
  // As a route shed by the overload guard is: refused in its own onRequest hook.
  app.get("/shed", { onRequest: (_req, _reply, done) => done(rateLimited(1)) }, async () => ({}));
  app.post("/small", { bodyLimit: 16 }, async () => ({}));
  return app;
}

describe("request ids on every answer and log line", () => {
  const lines: Record<string, unknown>[] = [];
  let app: FastifyInstance;
  beforeAll(async () => {
    app = appWithLog(lines);
    await app.ready();
  });
  afterAll(() => app.close());

  const call = (method: "GET" | "POST" | "OPTIONS", url: string, id?: string, payload?: string) =>
    app.inject({ method, url, headers: { ...(id === undefined ? {} : { "x-request-id": id }), ...(payload ? { "content-type": "application/json" } : {}) }, ...(payload ? { payload } : {}) });

  it("echoes a client's id on success, error, unknown route, too-large body, shed request and preflight", async () => {
    const cases: [Parameters<typeof call>[0], string, number, string?][] = [
      ["GET", "/ok", 200],
      ["GET", "/boom", 500],
      ["GET", "/refused", 403],
      ["GET", "/nowhere", 404],
      ["GET", "/shed", 429],
      ["POST", "/small", 400, JSON.stringify({ big: "x".repeat(100) })],
      ["OPTIONS", "/ok", 404],
      ["GET", "/%E0%A4%A", 400],
    ];
    for (const [method, url, status, payload] of cases) {
      const id = `client-${method}-${status}.x:1`;
      const res = await call(method, url, id, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(status);
      expect(res.headers["x-request-id"], `${method} ${url}`).toBe(id);
      if (status >= 400) expect(res.json<{ error: { requestId: string } }>().error.requestId).toBe(id);
    }
  });

  it("answers a generated id when the client's is not of the form, in header and envelope alike", async () => {
    for (const bad of ["x".repeat(129), "a b", "caf\u00e9"]) {
      const res = await call("GET", "/nowhere", bad);
      const id = res.headers["x-request-id"];
      expect(id).toMatch(UUID);
      expect(res.json<{ error: { requestId: string } }>().error.requestId).toBe(id);
    }
  });

  it("names the request in the log lines the request causes", async () => {
    lines.length = 0;
    await call("GET", "/boom", "log-boom-1");
    await call("GET", "/refused", "log-refused-1");
    expect(lines.find((l) => l.msg === "request failed")).toMatchObject({ requestId: "log-boom-1" });
    expect(lines.find((l) => l.msg === "request refused")).toMatchObject({ requestId: "log-refused-1", reason: "tenant suspended" });
    expect(lines.every((l) => typeof l.requestId === "string")).toBe(true);
  });

  it("writes one access line per answered request: route template, status, time, request id, tenant; never a header, query or body", async () => {
    lines.length = 0;
    const secret = "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln";
    await app.inject({ method: "GET", url: "/items/secret-id-7?token=query-secret", headers: { authorization: secret, "x-request-id": "acc-1", "x-test-tenant": "t1" } });
    await app.inject({ method: "GET", url: "/nowhere/else", headers: { "x-request-id": "acc-2" } });
    await app.inject({ method: "POST", url: "/small", headers: { "x-request-id": "acc-3", "content-type": "application/json" }, payload: JSON.stringify({ password: "p4ssw0rd-in-body" }) });
    const access = lines.filter((l) => l.msg === "request");
    expect(access.map((l) => l.requestId)).toEqual(["acc-1", "acc-2", "acc-3"]);
    expect(access[0]).toMatchObject({ method: "GET", route: "/items/:id", status: 200, tenant: "t_1" });
    expect(access[1]).toMatchObject({ method: "GET", route: "unmatched", status: 404 });
    expect(access[1]).not.toHaveProperty("tenant");
    expect(access[2]).toMatchObject({ method: "POST", route: "/small", status: 400 });
    for (const l of access) expect(typeof l.ms).toBe("number");
    const text = JSON.stringify(lines);
    for (const leaked of ["eyJhbGciOiJIUzI1NiJ9", "query-secret", "secret-id-7", "p4ssw0rd-in-body"]) expect(text).not.toContain(leaked);
  });

  it("the id travels to a service: its handler and its log see the same 128 characters", async () => {
    const key = Buffer.alloc(32, 7);
    const seen: string[] = [];
    const logged: Record<string, unknown>[] = [];
    const serviceLog = pino(
      { level: "error" },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          logged.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      }),
    );
    const transport = createRouterTransport(
      (router) =>
        router.service(TenancyService, {
          getTenant: (_req, ctx) => {
            seen.push(ctx.values.get(requestIdKey));
            throw new FeedsError("INTERNAL", "service failed");
          },
        }),
      {
        router: { interceptors: [createServerInterceptor(serviceLog, createInternalAuth(rootKeys(key)))] },
        transport: { interceptors: [createClientInterceptor(createInternalAuth(rootKeys(key)), "gateway")] },
      },
    );
    const tenancy = createClient(TenancyService, transport);
    const id = `r.${"9".repeat(126)}`;
    await expect(tenancy.getTenant({ id: "t" }, scope({ tenantId: "t", requestId: id }))).rejects.toThrow();
    expect(seen).toEqual([id]);
    expect(logged.find((l) => l.msg === "rpc failed")).toMatchObject({ requestId: id });
  });
});
