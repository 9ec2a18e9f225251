// Bench 2: RPC plumbing vs bare echo. Network cases run the server and the client in two
// processes (one core each on a 2-core machine); in-process cases run in one process, as the
// one-process system does.
import { join } from "node:path";
import { benchDir, startNode } from "./lib.mjs";

export const rpcCases = [
  { name: "connect-bare", server: "connect-bare", label: "connect-node h2, bare" },
  { name: "connect-plumbed", server: "connect-plumbed", label: "connect-node h2, plumbed (serveModules)" },
  { name: "inproc-bare", label: "in-process router, bare" },
  { name: "inproc-plumbed", label: "in-process router, plumbed (createInProcessTransport)" },
  { name: "grpcjs", server: "grpcjs", label: "@grpc/grpc-js h2, bare echo" },
];

/** @param {{ log: (...a: any[]) => void, inFlight?: number, durationS?: number, warmupS?: number }} o */
export async function runRpc(o) {
  const opts = { inFlight: o.inFlight ?? 64, durationS: o.durationS ?? 5, warmupS: o.warmupS ?? 1.5 };
  const results = {};
  for (const c of rpcCases) {
    let server;
    try {
      let port;
      if (c.server) {
        server = startNode(join(benchDir, "rpc-server.mjs"), { args: [c.server], name: `rpc-server ${c.server}` });
        ({ port } = await server.ready);
      }
      const client = startNode(join(benchDir, "rpc-client.mjs"), {
        args: [c.name, JSON.stringify({ ...opts, port })],
        name: `rpc-client ${c.name}`,
        timeoutMs: (opts.durationS + opts.warmupS + 60) * 1000,
      });
      const r = await client.result;
      results[c.name] = { ...r, label: c.label };
      o.log(`  ${c.label}: ${r.rps.toFixed(0)} calls/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms${r.errors ? `, ${r.errors} errors` : ""}`);
    } catch (e) {
      results[c.name] = { error: String(e.message ?? e).split("\n")[0], label: c.label };
      o.log(`  ${c.label}: FAILED ${e.message}`);
    } finally {
      await server?.stop();
    }
  }
  const ratio = (a, b) => (results[a]?.rps && results[b]?.rps ? results[a].rps / results[b].rps : NaN);
  return {
    opts,
    results,
    networkRatio: ratio("connect-plumbed", "connect-bare"),
    inProcessRatio: ratio("inproc-plumbed", "inproc-bare"),
    connectVsGrpcJs: ratio("connect-bare", "grpcjs"),
  };
}
