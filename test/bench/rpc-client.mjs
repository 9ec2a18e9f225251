// Bench 2 client. argv[2]: JSON {cases: [{mode, port?}], inFlight, warmupS, roundS, rounds}.
// Network modes (connect-bare, connect-plumbed, grpcjs) call a server process on 127.0.0.1;
// in-process modes (inproc-bare, inproc-plumbed) serve and call in this process, as the
// one-process system does. Keeps `inFlight` calls outstanding. Each case is warmed up, then the
// cases take turns for `rounds` rounds (A B C A B C ...), so that other work on the machine skews
// them alike. Prints {"phase":"measure"} when the rounds begin, then one JSON line of figures.
import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { toBinary, create } from "@bufbuild/protobuf";
import { createInProcessTransport, createInternalAuth, createLogger, rootKeys, scope } from "@feeds/kit";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus,
} from "@feeds/proto/grpc/health/v1/health";
import { echoDefinition } from "./rpc-echo.mjs";
import { percentile } from "./lib.mjs";

const o = JSON.parse(process.argv[2] ?? "{}");
const SERVING = HealthCheckResponse_ServingStatus.SERVING;
const tenantId = randomBytes(8).toString("hex");

const plain = (transport) => {
  const client = createClient(Health, transport);
  return () => client.check({ service: "" });
};
// What the gateway sends with every call: tenant, caller and a fresh request id.
const plumbed = (transport) => {
  const client = createClient(Health, transport);
  return () => client.check({ service: "" }, scope({ tenantId, caller: { kind: "server" }, requestId: randomUUID() }));
};

const closers = [];
async function callerFor({ mode, port }) {
  switch (mode) {
    case "connect-bare":
    case "connect-plumbed": {
      const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}`, httpVersion: "2" });
      return mode === "connect-bare" ? plain(transport) : plumbed(transport);
    }
    case "inproc-bare":
      return plain(createRouterTransport((router) => router.service(Health, { check: () => ({ status: SERVING }) })));
    case "inproc-plumbed":
      // Health/Check is open (probes): the client signs no token for it and the server verifies none.
      return plumbed(createInProcessTransport([], createLogger({ LOG_LEVEL: "warn" }, "bench"), createInternalAuth(rootKeys(randomBytes(32))), "gateway"));
    case "grpcjs": {
      const grpc = await import("@grpc/grpc-js");
      const Client = grpc.makeGenericClientConstructor(echoDefinition, "Echo");
      const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      closers.push(() => client.close());
      // The same bytes Health/Check answers (status SERVING), echoed.
      const payload = Buffer.from(toBinary(HealthCheckResponseSchema, create(HealthCheckResponseSchema, { status: SERVING })));
      return () => new Promise((resolve, reject) => client.echo(payload, (err, res) => (err ? reject(err) : resolve(res))));
    }
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

async function drive(call, seconds, latencies) {
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

const cases = [];
for (const c of o.cases) {
  const call = await callerFor(c);
  await call(); // must succeed before measuring
  cases.push({ mode: c.mode, call, latencies: [], calls: 0, errors: 0, seconds: 0, cpuS: 0, roundRps: [] });
}
for (const c of cases) await drive(c.call, o.warmupS, null);
process.stdout.write(`${JSON.stringify({ phase: "measure" })}\n`);
for (let r = 0; r < o.rounds; r++) {
  for (const c of cases) {
    const cpu0 = process.cpuUsage();
    const x = await drive(c.call, o.roundS, c.latencies);
    const cpu = process.cpuUsage(cpu0);
    c.cpuS += (cpu.user + cpu.system) / 1e6;
    c.calls += x.calls;
    c.errors += x.errors;
    c.seconds += x.seconds;
    c.roundRps.push(x.calls / x.seconds);
  }
}
for (const close of closers) close();
const out = {};
for (const c of cases) {
  c.latencies.sort((a, b) => a - b);
  out[c.mode] = {
    rps: c.calls / c.seconds,
    medianRoundRps: percentile([...c.roundRps].sort((a, b) => a - b), 50),
    roundRps: c.roundRps,
    p50: percentile(c.latencies, 50),
    p99: percentile(c.latencies, 99),
    calls: c.calls,
    errors: c.errors,
    seconds: c.seconds,
    inFlight: o.inFlight,
    // CPU of this process while driving this case, in cores (in-process modes: client and server).
    clientCores: c.cpuS / c.seconds,
  };
}
process.stdout.write(`${JSON.stringify({ cases: out })}\n`);
process.exit(0);
