import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createContextKey, createContextValues } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";
import { GetCredentialRequestSchema, GetCredentialResponseSchema, TenancyService, type GetCredentialRequest, type GetCredentialResponse } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import {
  callerOf,
  createInProcessTransport,
  createInternalAuth,
  createLogger,
  encodeCaller,
  fromRpcError,
  notFound,
  scope,
  tenantKey,
  type ServiceModule,
} from "../src/index.js";

// The one-process system's in-process transport (kit/src/direct-transport.ts): unary calls reach
// the implementation with the request message itself and answer its message, behind the same
// interceptors as every other transport; streams take Connect's router transport.

const log = createLogger({ LOG_LEVEL: "silent" }, "test");
const auth = createInternalAuth(randomBytes(32));
/** A value only the client side knows: never part of the signed token. */
const clientOnly = createContextKey<string>("", { description: "client only" });

function system(mode: "direct" | "router") {
  const seen: { request?: GetCredentialRequest; answer?: GetCredentialResponse; clientOnly?: string } = {};
  const modules: ServiceModule[] = [
    {
      name: "tenancy",
      routes: (router) =>
        router.service(TenancyService, {
          getCredential(req, ctx) {
            seen.request = req;
            seen.clientOnly = ctx.values.get(clientOnly);
            if (req.apiKey === "missing") throw notFound("no such key");
            if (req.apiKey === "hang") return new Promise<never>(() => undefined);
            seen.answer = create(GetCredentialResponseSchema, { apiSecret: `${encodeCaller(callerOf(ctx))}|${ctx.values.get(tenantKey) ?? ""}` });
            return seen.answer;
          },
        }),
    },
    {
      name: "graph",
      routes: (router) =>
        router.service(GraphService, {
          async *streamFollowerFeeds(req) {
            yield { feeds: [`${req.feed?.group}:${req.feed?.id}`] };
            yield { feeds: ["timeline:b", "timeline:c"] };
          },
        }),
    },
  ];
  const transport = createInProcessTransport(modules, log, auth, mode);
  return { seen, tenancy: createClient(TenancyService, transport), graph: createClient(GraphService, transport) };
}

describe("the in-process transport (direct)", () => {
  it("hands the implementation the request message itself and the caller its answer: nothing encoded or decoded", async () => {
    const { seen, tenancy } = system("direct");
    const request = create(GetCredentialRequestSchema, { apiKey: "ak_1" });
    const answer = await tenancy.getCredential(request, scope({ tenantId: "t1", caller: { kind: "server" } }));
    expect(seen.request).toBe(request);
    expect(answer).toBe(seen.answer);
    expect(answer.apiSecret).toBe("server|t1");
  });

  it("the router transport, for comparison, copies both messages through the wire format", async () => {
    const { seen, tenancy } = system("router");
    const request = create(GetCredentialRequestSchema, { apiKey: "ak_1" });
    const answer = await tenancy.getCredential(request, scope({ tenantId: "t1", caller: { kind: "server" } }));
    expect(seen.request).not.toBe(request);
    expect(seen.request).toEqual(request);
    expect(answer).not.toBe(seen.answer);
    expect(answer.apiSecret).toBe("server|t1");
  });

  it("gives the service only what the verified token says: the caller's other context values stay on its side", async () => {
    const { seen, tenancy } = system("direct");
    const options = scope({ tenantId: "t2", caller: { kind: "user", userId: "u.1" } });
    options.contextValues?.set(clientOnly, "secret");
    expect((await tenancy.getCredential({ apiKey: "ak_1" }, options)).apiSecret).toBe(`${encodeCaller({ kind: "user", userId: "u.1" })}|t2`);
    expect(seen.clientOnly).toBe("");
    // No tenant and no caller named: anonymous, no tenant.
    expect((await tenancy.getCredential({ apiKey: "ak_1" }, { contextValues: createContextValues() })).apiSecret).toBe("anonymous|");
  });

  it("maps a service's error as the wire does: the Connect code, and the interface code back at the caller", async () => {
    const { tenancy } = system("direct");
    const err = await tenancy.getCredential({ apiKey: "missing" }, scope({ tenantId: "t1", caller: { kind: "system" } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    const mapped = fromRpcError(err);
    expect(mapped.code).toBe("NOT_FOUND");
    expect(mapped.message).toBe("no such key");
  });

  it("cuts a call off at its deadline with DeadlineExceeded", async () => {
    const { tenancy } = system("direct");
    const t0 = Date.now();
    const err = await tenancy.getCredential({ apiKey: "hang" }, { ...scope({ tenantId: "t1", caller: { kind: "system" } }), timeoutMs: 50 }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it("carries server streams (through the router transport)", async () => {
    const { graph } = system("direct");
    const got: string[][] = [];
    for await (const m of graph.streamFollowerFeeds({ feed: { group: "user", id: "a" }, batchSize: 2 }, scope({ tenantId: "t1", caller: { kind: "system" } }))) got.push(m.feeds);
    expect(got).toEqual([["user:a"], ["timeline:b", "timeline:c"]]);
  });
});
