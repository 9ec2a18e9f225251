// Bench 2 server, one process per case. argv[2]: connect-bare | connect-plumbed | grpcjs.
// connect-bare: connect-node over HTTP/2, grpc.health.v1.Health/Check with a plain handler, no
// interceptors. connect-plumbed: @feeds/kit serveModules([]) (the same Health, mounted and
// intercepted exactly as every service process serves). grpcjs: @grpc/grpc-js unary echo of raw
// bytes (handwritten service definition, identity serialization). Prints {"ready":true,"port":N}.
import { randomBytes } from "node:crypto";
import * as http2 from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createInternalAuth, createLogger, rootKeys, serveModules } from "@feeds/kit";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import { echoDefinition } from "./rpc-echo.mjs";

const mode = process.argv[2];
let port;
let close;

if (mode === "connect-bare") {
  const handler = connectNodeAdapter({
    routes: (router) => router.service(Health, { check: () => ({ status: HealthCheckResponse_ServingStatus.SERVING }) }),
  });
  const server = http2.createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = server.address().port;
  close = () => new Promise((r) => server.close(r));
} else if (mode === "connect-plumbed") {
  const log = createLogger({ LOG_LEVEL: "warn" }, "bench");
  const server = await serveModules([], { host: "127.0.0.1", port: 0, log, auth: createInternalAuth(rootKeys(randomBytes(32))) });
  port = server.port;
  close = () => server.close();
} else if (mode === "grpcjs") {
  const grpc = await import("@grpc/grpc-js");
  const server = new grpc.Server();
  server.addService(echoDefinition, { echo: (call, cb) => cb(null, call.request) });
  port = await new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  close = () => new Promise((r) => server.tryShutdown(() => r()));
} else {
  throw new Error(`unknown mode ${mode}`);
}

process.stdout.write(`${JSON.stringify({ ready: true, port })}\n`);
const stop = async () => {
  // Open HTTP/2 sessions would hold close(); the client has gone by now, but do not wait on it.
  setTimeout(() => process.exit(0), 1000).unref();
  await close();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
