import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient, createRouterTransport, type Client, type ConnectRouter, type Interceptor, type Transport } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import type { InternalAuth } from "./internal-auth.js";
import type { Logger } from "./log.js";
import type { ServiceName, Signer } from "./config.js";
import { createClientInterceptor, createServerInterceptor } from "./rpc-context.js";
import { createDirectTransport } from "./direct-transport.js";
import { someCause } from "./errors.js";

/** A service as mounted in a process: its Connect routes, plus optional lifecycle. */
export interface ServiceModule {
  name: ServiceName;
  routes(router: ConnectRouter): void;
  /** Background work (workers, relays) started once the process serves. */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

/** What grpc.health.v1 answers for a service name ("" for the process). */
export type HealthStatus = (service: string) => HealthCheckResponse_ServingStatus;
const alwaysServing: HealthStatus = () => HealthCheckResponse_ServingStatus.SERVING;

function mountAll(router: ConnectRouter, modules: ServiceModule[], health: HealthStatus = alwaysServing) {
  for (const m of modules) m.routes(router);
  // Standard gRPC health: "" and each mounted service's full name answer SERVING (by default).
  router.service(Health, {
    check: (req) => ({ status: health(req.service) }),
  });
}

/**
 * In-process transport: how the one-process system connects the gateway and its services, each
 * calling as `signer`. Calls are signed and verified here too: one path, whichever way a service
 * is reached. `direct` (default): unary calls skip the wire format (direct-transport.ts);
 * `router`: Connect's in-memory protocol for every call.
 */
export function createInProcessTransport(
  modules: ServiceModule[],
  log: Logger,
  auth: InternalAuth,
  signer: Signer,
  mode: "direct" | "router" = "direct",
): Transport {
  const routes = (router: ConnectRouter) => mountAll(router, modules);
  const router = createLocalTransport(routes, log, auth, signer);
  if (mode === "router") return router;
  return createDirectTransport({
    routes,
    clientInterceptors: [createClientInterceptor(auth, signer)],
    serverInterceptors: [createServerInterceptor(log, auth)],
    streams: router,
  });
}

/** Routes served in this process behind the same client and server interceptors (also for tests). */
export function createLocalTransport(routes: (router: ConnectRouter) => void, log: Logger, auth: InternalAuth, signer: Signer): Transport {
  return createRouterTransport(routes, {
    router: { interceptors: [createServerInterceptor(log, auth)] },
    transport: { interceptors: [createClientInterceptor(auth, signer)] },
  });
}

/**
 * Whether a call failed before the server took it: a stream it refused (NGHTTP2_REFUSED_STREAM: sent
 * on a session the server was closing with GOAWAY, above the last stream it accepted) or one that
 * could not be opened on a session that had received GOAWAY. Nothing of such a call ran.
 */
export const notTakenByServer = (err: unknown): boolean =>
  someCause(err, (e) => /REFUSED_STREAM|ERR_HTTP2_GOAWAY_SESSION|after receiving a GOAWAY/.test(`${e.message} ${typeof e.code === "string" ? e.code : ""}`));

/**
 * A unary call the server never took (a process stopping: notTakenByServer) is sent again, at most
 * twice: the next attempt opens a new connection, which reaches another process of the service.
 */
export const retryNotTaken: Interceptor = (next) => async (req) => {
  for (let attempt = 0; ; attempt++) {
    try {
      return await next(req);
    } catch (err) {
      if (req.stream || attempt >= 2 || !notTakenByServer(err)) throw err;
    }
  }
};

/** gRPC over HTTP/2 cleartext: how split mode reaches a service; every call carries a token `signer` signed. */
export function createNetworkTransport(baseUrl: string, auth: InternalAuth, signer: Signer): Transport {
  return createGrpcTransport({
    baseUrl,
    httpVersion: "2",
    defaultTimeoutMs: 10_000,
    interceptors: [retryNotTaken, createClientInterceptor(auth, signer)],
  } as Parameters<typeof createGrpcTransport>[0]);
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
  opts: { host: string; port: number; log: Logger; auth: InternalAuth; health?: HealthStatus; closeWaitMs?: number },
): Promise<RpcServer> {
  const handler = connectNodeAdapter({
    routes: (router) => mountAll(router, modules, opts.health),
    interceptors: [createServerInterceptor(opts.log, opts.auth)],
  });
  const server = http2.createServer(handler);
  // Callers keep their HTTP/2 sessions open for good: closing waits for them, so each is told to
  // go away (GOAWAY: its calls in flight finish, no new ones start) and destroyed if it lingers.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          for (const s of sessions) s.destroy();
        }, opts.closeWaitMs ?? 10_000);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        for (const s of sessions) s.close();
      }),
  };
}
