import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import {
  Code,
  createClient,
  createContextKey,
  createRouterTransport,
  type CallOptions,
  type Client,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import { toConnectError, unauthenticated, forbidden } from "./errors.js";
import type { Logger } from "./log.js";
import type { ServiceName } from "./config.js";

// Who is calling, as the gateway verified it. It travels as the `feeds-caller` header.
export type Caller =
  | { kind: "system" }
  | { kind: "server" }
  | { kind: "user"; userId: string }
  | { kind: "operator"; operatorId: string };

export const tenantKey = createContextKey<string | undefined>(undefined, { description: "tenant id" });
export const callerKey = createContextKey<Caller>({ kind: "system" }, { description: "caller" });
export const requestIdKey = createContextKey<string>("", { description: "request id" });

const H_TENANT = "feeds-tenant";
const H_CALLER = "feeds-caller";
const H_REQUEST = "feeds-request-id";

function encodeCaller(c: Caller): string {
  switch (c.kind) {
    case "user":
      return `user:${c.userId}`;
    case "operator":
      return `operator:${c.operatorId}`;
    case "server":
    case "system":
      return c.kind;
  }
}

function decodeCaller(v: string | null): Caller {
  if (!v || v === "system") return { kind: "system" };
  if (v === "server") return { kind: "server" };
  if (v.startsWith("user:")) return { kind: "user", userId: v.slice(5) };
  if (v.startsWith("operator:")) return { kind: "operator", operatorId: v.slice(9) };
  return { kind: "system" };
}

export interface CallScope {
  tenantId?: string | undefined;
  caller?: Caller;
  requestId?: string;
}

/** Call options that carry the tenant, caller and request id to the service. */
export function scope(s: CallScope): CallOptions {
  const headers: Record<string, string> = {};
  if (s.tenantId) headers[H_TENANT] = s.tenantId;
  if (s.caller) headers[H_CALLER] = encodeCaller(s.caller);
  if (s.requestId) headers[H_REQUEST] = s.requestId;
  return { headers };
}

/** Handlers: the tenant of this call; a call without one is refused (tenant scope is structural). */
export function requireTenant(ctx: HandlerContext): string {
  const t = ctx.values.get(tenantKey);
  if (!t) throw unauthenticated("tenant required");
  return t;
}

export function callerOf(ctx: HandlerContext): Caller {
  return ctx.values.get(callerKey);
}

export function requireOperator(ctx: HandlerContext): string {
  const c = ctx.values.get(callerKey);
  if (c.kind !== "operator") throw forbidden();
  return c.operatorId;
}

/**
 * The service-side plumbing every call passes: context values from headers, errors mapped to
 * ConnectError with the interface code, unexpected failures logged with their cause.
 */
export function createServerInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const tenant = req.header.get(H_TENANT);
    if (tenant) req.contextValues.set(tenantKey, tenant);
    req.contextValues.set(callerKey, decodeCaller(req.header.get(H_CALLER)));
    const rid = req.header.get(H_REQUEST) ?? "";
    req.contextValues.set(requestIdKey, rid);
    const mapped = (e: unknown) => {
      const ce = toConnectError(e);
      if (ce.code === Code.Internal) {
        log.error({ err: e, rpc: req.url, requestId: rid }, "rpc failed");
      }
      return ce;
    };
    try {
      const res = await next(req);
      // A streamed answer fails while it is read: map those errors the same way.
      if (res.stream) return { ...res, message: mapStreamErrors(res.message, mapped) };
      return res;
    } catch (e) {
      throw mapped(e);
    }
  };
}

async function* mapStreamErrors<T>(messages: AsyncIterable<T>, mapped: (e: unknown) => Error): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (e) {
    throw mapped(e);
  }
}

/** A service as mounted in a process: its Connect routes, plus optional lifecycle. */
export interface ServiceModule {
  name: ServiceName;
  routes(router: ConnectRouter): void;
  /** Background work (workers, relays) started once the process serves. */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

function mountAll(router: ConnectRouter, modules: ServiceModule[]) {
  for (const m of modules) m.routes(router);
  // Standard gRPC health: "" and each mounted service's full name answer SERVING.
  router.service(Health, {
    check: () => ({ status: HealthCheckResponse_ServingStatus.SERVING }),
  });
}

/** In-process transport: how the one-process system connects the gateway to its services. */
export function createInProcessTransport(modules: ServiceModule[], log: Logger): Transport {
  return createRouterTransport((router) => mountAll(router, modules), {
    router: { interceptors: [createServerInterceptor(log)] },
  });
}

/** gRPC over HTTP/2 cleartext on loopback: how split mode connects the gateway to a service. */
export function createNetworkTransport(baseUrl: string): Transport {
  return createGrpcTransport({ baseUrl, httpVersion: "2", defaultTimeoutMs: 10_000 } as Parameters<
    typeof createGrpcTransport
  >[0]);
}

export function clientOf<T extends DescService>(service: T, transport: Transport): Client<T> {
  return createClient(service, transport);
}

export interface RpcServer {
  port: number;
  close(): Promise<void>;
}

/** Serves modules over gRPC (and Connect) on HTTP/2 cleartext. */
export async function serveModules(
  modules: ServiceModule[],
  opts: { host: string; port: number; log: Logger },
): Promise<RpcServer> {
  const handler = connectNodeAdapter({
    routes: (router) => mountAll(router, modules),
    interceptors: [createServerInterceptor(opts.log)],
  });
  const server = http2.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  };
}
