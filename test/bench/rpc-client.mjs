// Bench 2 client, one process per case. argv[2]: mode, argv[3]: JSON {port?, inFlight, durationS, warmupS}.
// Network modes (connect-bare, connect-plumbed, grpcjs) call the server process on 127.0.0.1;
// in-process modes (inproc-bare, inproc-plumbed) serve and call in this process, as the
// one-process system does. Keeps `inFlight` calls outstanding; prints one JSON line of figures.
import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { toBinary, create } from "@bufbuild/protobuf";
import { createInProcessTransport, createLogger, scope } from "@feeds/kit";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus,
} from "@feeds/proto/grpc/health/v1/health";
import { echoDefinition } from "./rpc-echo.mjs";
import { percentile } from "./lib.mjs";

const mode = process.argv[2];
const o = JSON.parse(process.argv[3] ?? "{}");
const SERVING = HealthCheckResponse_ServingStatus.SERVING;
const tenantId = randomBytes(8).toString("hex");

/** @type {() => Promise<unknown>} */
let call;
let close = async () => undefined;

const plain = (transport) => {
  const client = createClient(Health, transport);
  return () => client.check({ service: "" });
};
// What the gateway sends with every call: tenant, caller and a fresh request id.
const plumbed = (transport) => {
  const client = createClient(Health, transport);
  return () => client.check({ service: "" }, scope({ tenantId, caller: { kind: "server" }, requestId: randomUUID() }));
};

switch (mode) {
  case "connect-bare":
  case "connect-plumbed": {
    const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${o.port}`, httpVersion: "2" });
    call = mode === "connect-bare" ? plain(transport) : plumbed(transport);
    break;
  }
  case "inproc-bare":
    call = plain(createRouterTransport((router) => router.service(Health, { check: () => ({ status: SERVING }) })));
    break;
  case "inproc-plumbed":
    call = plumbed(createInProcessTransport([], createLogger({ LOG_LEVEL: "warn" }, "bench")));
    break;
  case "grpcjs": {
    const grpc = await import("@grpc/grpc-js");
    const Client = grpc.makeGenericClientConstructor(echoDefinition, "Echo");
    const client = new Client(`127.0.0.1:${o.port}`, grpc.credentials.createInsecure());
    // The same bytes Health/Check answers (status SERVING), echoed.
    const payload = Buffer.from(toBinary(HealthCheckResponseSchema, create(HealthCheckResponseSchema, { status: SERVING })));
    call = () => new Promise((resolve, reject) => client.echo(payload, (err, res) => (err ? reject(err) : resolve(res))));
    close = async () => client.close();
    break;
  }
  default:
    throw new Error(`unknown mode ${mode}`);
}

// Sanity: one call must succeed before measuring.
await call();

async function drive(seconds, latencies) {
  const end = performance.now() + seconds * 1000;
  let calls = 0;
  let errors = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      try {
        await call();
        calls++;
        latencies?.push(performance.now() - t);
      } catch {
        errors++;
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: o.inFlight }, worker));
  return { calls, errors, seconds: (performance.now() - t0) / 1000 };
}

await drive(o.warmupS, null);
const latencies = [];
const r = await drive(o.durationS, latencies);
latencies.sort((a, b) => a - b);
await close();
process.stdout.write(
  `${JSON.stringify({
    mode,
    rps: r.calls / r.seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    calls: r.calls,
    errors: r.errors,
    seconds: r.seconds,
    inFlight: o.inFlight,
  })}\n`,
);
process.exit(0);
