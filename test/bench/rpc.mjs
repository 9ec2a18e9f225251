// Bench 2: RPC plumbing vs bare echo, 64 calls in flight.
// Network cases: each server in its own process, one client process calling all three servers
// in turns (connect-node bare, connect-node plumbed, @grpc/grpc-js bare). In-process cases: one
// process serving and calling both transports in turns, as the one-process system does.
import { join } from "node:path";
import { benchDir, cpuMeter, startNode } from "./lib.mjs";

export const rpcLabels = {
  "connect-bare": "connect-node h2, bare",
  "connect-plumbed": "connect-node h2, plumbed (serveModules)",
  grpcjs: "@grpc/grpc-js h2, bare echo",
  "inproc-bare": "in-process router, bare",
  "inproc-plumbed": "in-process router, plumbed (createInProcessTransport)",
};

/** Runs one client over `cases`; servers (by mode) are metered over the measured rounds. */
async function runClient(cases, servers, opts) {
  let meter = null;
  let cpu = null;
  const pids = cases.map((c) => servers[c.mode]?.child.pid ?? 0);
  const client = startNode(join(benchDir, "rpc-client.mjs"), {
    args: [JSON.stringify({ ...opts, cases })],
    name: `rpc-client ${cases.map((c) => c.mode).join(",")}`,
    timeoutMs: (cases.length * (opts.warmupS + opts.roundS * opts.rounds) + 60) * 1000,
    onJson: (m) => {
      if (m.phase === "measure") meter = cpuMeter(pids.filter(Boolean));
      else if (m.cases) cpu = meter?.end() ?? null;
    },
  });
  const r = await client.result;
  if (cpu) r.cases.machine = { machineCores: cpu.machineCores, infraCores: cpu.infraCores, otherCores: cpu.otherCores, otherTop: cpu.otherTop };
  let k = 0;
  for (const [i, c] of cases.entries()) {
    const x = r.cases[c.mode];
    if (pids[i] && cpu) {
      const cpuS = cpu.processCores[k++] * cpu.seconds;
      x.serverCores = cpuS / x.seconds; // a server works only during its own rounds
      x.serverCpuMsPerCall = (cpuS * 1000) / x.calls;
    }
    x.clientCpuMsPerCall = (x.clientCores * x.seconds * 1000) / x.calls;
    x.label = rpcLabels[c.mode];
  }
  return r.cases;
}

/** @param {{ log: (...a: any[]) => void, inFlight?: number, roundS?: number, rounds?: number, warmupS?: number }} o */
export async function runRpc(o) {
  const opts = { inFlight: o.inFlight ?? 64, warmupS: o.warmupS ?? 1, roundS: o.roundS ?? 1.5, rounds: o.rounds ?? 4 };
  const servers = {};
  const results = {};
  try {
    for (const mode of ["connect-bare", "connect-plumbed", "grpcjs"]) {
      servers[mode] = startNode(join(benchDir, "rpc-server.mjs"), { args: [mode], name: `rpc-server ${mode}` });
    }
    const ports = {};
    for (const [mode, s] of Object.entries(servers)) ports[mode] = (await s.ready).port;
    Object.assign(
      results,
      await runClient(
        ["connect-bare", "connect-plumbed", "grpcjs"].map((mode) => ({ mode, port: ports[mode] })),
        servers,
        opts,
      ),
    );
  } catch (e) {
    for (const m of ["connect-bare", "connect-plumbed", "grpcjs"]) results[m] ??= { error: String(e.message ?? e).split("\n")[0], label: rpcLabels[m] };
    o.log(`  network cases FAILED: ${e.message}`);
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  }
  const machine = {};
  machine.network = results.machine;
  delete results.machine;
  try {
    Object.assign(results, await runClient([{ mode: "inproc-bare" }, { mode: "inproc-plumbed" }], {}, opts));
    machine.inProcess = results.machine;
    delete results.machine;
  } catch (e) {
    for (const m of ["inproc-bare", "inproc-plumbed"]) results[m] ??= { error: String(e.message ?? e).split("\n")[0], label: rpcLabels[m] };
    o.log(`  in-process cases FAILED: ${e.message}`);
  }
  for (const [k, m] of Object.entries(machine)) {
    if (!m) continue;
    const top = m.otherTop.map((x) => `${x.comm}[${x.pid}] ${(x.cores * 100).toFixed(0)}%`).join(", ");
    o.log(`  machine over the ${k} rounds: ${m.machineCores.toFixed(2)} cores busy; other people's work ${m.otherCores.toFixed(2)} cores${top ? ` (${top})` : ""}`);
  }
  for (const [mode, r] of Object.entries(results)) {
    if (r.error) continue;
    const cpu =
      r.serverCpuMsPerCall !== undefined
        ? `CPU/call: client ${(r.clientCpuMsPerCall * 1000).toFixed(0)} µs, server ${(r.serverCpuMsPerCall * 1000).toFixed(0)} µs`
        : `CPU/call (client+server) ${(r.clientCpuMsPerCall * 1000).toFixed(0)} µs`;
    o.log(
      `  ${rpcLabels[mode]}: ${r.rps.toFixed(0)} calls/s (rounds ${r.roundRps.map((v) => v.toFixed(0)).join(", ")}), ` +
        `p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${cpu}${r.errors ? `, ${r.errors} errors` : ""}`,
    );
  }
  const ratio = (a, b) => (results[a]?.rps && results[b]?.rps ? results[a].rps / results[b].rps : NaN);
  return {
    opts,
    results,
    machine,
    networkRatio: ratio("connect-plumbed", "connect-bare"),
    inProcessRatio: ratio("inproc-plumbed", "inproc-bare"),
    connectVsGrpcJs: ratio("connect-bare", "grpcjs"),
  };
}
