import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createContextKey, createContextValues } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { GraphService, StreamFollowerFeedsResponseSchema, type StreamFollowerFeedsResponse } from "@feeds/proto/feeds/graph/v1/graph";
import { GetCredentialRequestSchema, GetCredentialResponseSchema, TenancyService, type GetCredentialRequest, type GetCredentialResponse } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import {
  callerOf,
  createInProcessTransport,
  createInternalAuth,
  createLogger,
  rootKeys,
  encodeCaller,
  fromRpcError,
  notFound,
  scope,
  tenantKey,
  type ServiceModule,
} from "../src/index.js";

// The one-process system's in-process transport (kit/src/direct-transport.ts): unary calls reach
// the implementation with the request message itself and answer its message, behind the same
// interceptors as every other transport; so do server streams (their messages, as yielded).

const log = createLogger({ LOG_LEVEL: "silent" }, "test");
const auth = createInternalAuth(rootKeys(randomBytes(32)));
/** A value only the client side knows: never part of the signed token. */
const clientOnly = createContextKey<string>("", { description: "client only" });

function system(mode: "direct" | "router") {
  const seen: { request?: GetCredentialRequest; answer?: GetCredentialResponse; clientOnly?: string; yielded: StreamFollowerFeedsResponse[]; streamTenant?: string } = { yielded: [] };
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
          async *streamFollowerFeeds(req, ctx) {
            seen.streamTenant = ctx.values.get(tenantKey);
            const first = create(StreamFollowerFeedsResponseSchema, { feeds: [`${req.feed?.group}:${req.feed?.id}`] });
            seen.yielded.push(first);
            yield first;
            if (req.feed?.id === "fails") throw notFound("no such feed");
            if (req.feed?.id === "hangs") await new Promise<never>(() => undefined);
            const second = create(StreamFollowerFeedsResponseSchema, { feeds: ["timeline:b", "timeline:c"] });
            seen.yielded.push(second);
            yield second;
          },
        }),
    },
  ];
  // Each as the process that calls it: the gateway asks tenancy, the fan-out streams a feed's followers.
  const gateway = createInProcessTransport(modules, log, auth, "gateway", mode);
  const feed = createInProcessTransport(modules, log, auth, "feed", mode);
  return { seen, tenancy: createClient(TenancyService, gateway), graph: createClient(GraphService, feed) };
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

  const stream = (mode: "direct" | "router", id: string, timeoutMs?: number) => {
    const s = system(mode);
    const opts = { ...scope({ tenantId: "t1", caller: { kind: "system" } }), ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
    return { seen: s.seen, messages: s.graph.streamFollowerFeeds({ feed: { group: "user", id }, batchSize: 2 }, opts) };
  };

  it("hands a server stream's caller the messages the implementation yielded, behind the same interceptors (tenant from the token)", async () => {
    const { seen, messages } = stream("direct", "a");
    const got: StreamFollowerFeedsResponse[] = [];
    for await (const m of messages) got.push(m);
    expect(got.map((m) => m.feeds)).toEqual([["user:a"], ["timeline:b", "timeline:c"]]);
    expect(got).toHaveLength(2);
    got.forEach((m, i) => expect(m).toBe(seen.yielded[i]));
    expect(seen.streamTenant).toBe("t1");
  });

  it("the router transport, for comparison, copies a stream's messages through the wire format", async () => {
    const { seen, messages } = stream("router", "a");
    const got: StreamFollowerFeedsResponse[] = [];
    for await (const m of messages) got.push(m);
    expect(got.map((m) => m.feeds)).toEqual(seen.yielded.map((m) => m.feeds));
    got.forEach((m, i) => expect(m).not.toBe(seen.yielded[i]));
  });

  it("fails a stream's read with the Connect code of the service's error, after the messages before it", async () => {
    const { messages } = stream("direct", "fails");
    const got: string[][] = [];
    const err = await (async () => {
      for await (const m of messages) got.push(m.feeds);
    })().catch((e: unknown) => e);
    expect(got).toEqual([["user:fails"]]);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect(fromRpcError(err).code).toBe("NOT_FOUND");
  });

  it("cuts a stream off at its deadline with DeadlineExceeded while the implementation still works on its next message", async () => {
    const { messages } = stream("direct", "hangs", 100);
    const got: string[][] = [];
    const t0 = Date.now();
    const err = await (async () => {
      for await (const m of messages) got.push(m.feeds);
    })().catch((e: unknown) => e);
    expect(got).toEqual([["user:hangs"]]);
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
