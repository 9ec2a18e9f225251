// Bench 1 (full path vs bare route) and bench 3 (idle RSS, one process and split).
import { join } from "node:path";
import { startSystem } from "../../scripts/lib/system.mjs";
import { api, benchDir, profilerEnv, systemEnv, cpuMeter, dropNamespaceSafely, MB, namespaceHelpers, rssOf, serverToken, sleep, startNode, treeOf } from "./lib.mjs";

const USER_ID = "bench-user";

export const cpuNote = (c) =>
  c
    ? `server ${(c.serverCores * 100).toFixed(0)}% of a core (${c.serverCpuMsPerRequest.toFixed(2)} ms CPU/req), load generator ${(c.loadGeneratorCores * 100).toFixed(0)}%, machine ${c.machineCores.toFixed(2)} cores busy`
    : "no CPU figures";

/** Systems running now, so that an interrupted bench still stops them. */
const active = new Set();
export async function stopActiveSystems() {
  await Promise.all([...active].map((s) => s.stop()));
}
async function start(opts) {
  const s = await startSystem(opts);
  active.add(s);
  const stop = s.stop;
  s.stop = async () => {
    active.delete(s);
    await stop();
  };
  return s;
}

/** Sum of VmRSS over the system's processes and their descendants. */
function systemRss(system) {
  const pids = system.processes.flatMap((p) => (p.child.pid ? treeOf(p.child.pid) : []));
  return { bytes: pids.reduce((s, pid) => s + rssOf(pid), 0), processes: pids.length };
}

/**
 * Loads the targets from a separate process, taking turns (see load-worker.mjs); adds to each
 * target the CPU its server process used over the measured rounds.
 * @param {{name: string, url: string, headers?: Record<string,string>, pid: number}[]} targets
 */
async function load(targets, o, onMeasure) {
  let meter = null;
  let cpu = null;
  const w = startNode(join(benchDir, "load-worker.mjs"), {
    args: [JSON.stringify({ targets: targets.map(({ name, url, headers }) => ({ name, url, headers })), ...o })],
    name: "load-worker",
    timeoutMs: (o.warmupS * targets.length + o.roundS * o.rounds * targets.length + 60) * 1000,
    onJson: (m) => {
      if (m.phase === "measure") {
        meter = cpuMeter(targets.map((t) => t.pid));
        onMeasure?.();
      } else if (m.targets) cpu = meter?.end() ?? null;
    },
  });
  const r = await w.result;
  if (cpu) r.machine = { machineCores: cpu.machineCores, infraCores: cpu.infraCores, otherCores: cpu.otherCores, otherTop: cpu.otherTop };
  targets.forEach((t, i) => {
    const x = r.targets[t.name];
    if (!cpu) return;
    // Each server works only during its own rounds.
    const serverCpuS = cpu.processCores[i] * cpu.seconds;
    x.cpu = {
      serverCores: serverCpuS / x.seconds,
      serverCpuMsPerRequest: (serverCpuS * 1000) / x.ok,
      loadGeneratorCores: x.loadGeneratorCores,
      machineCores: cpu.machineCores,
    };
  });
  return r;
}

/**
 * @param {{ infra: any, log: (...a: any[]) => void, connections?: number, roundS?: number,
 *   rounds?: number, warmupS?: number, idleS?: number, cpuProfDir?: string }} o
 */
export async function runHttp(o) {
  const { infra, log } = o;
  const opts = { connections: o.connections ?? 20, warmupS: o.warmupS ?? 2, roundS: o.roundS ?? 2.5, rounds: o.rounds ?? 4 };
  const idleS = o.idleS ?? 5;
  const { newNamespace } = await namespaceHelpers();
  const namespace = newNamespace("bench");
  const env = systemEnv(infra, namespace, profilerEnv(o.cpuProfDir));
  const out = { namespace, load: opts };
  let system;
  let bare;
  try {
    log(`bench 1/3: starting the one-process system (namespace ${namespace})`);
    const t0 = Date.now();
    system = await start({ env });
    out.startupMs = Date.now() - t0;
    await sleep(idleS * 1000);
    const rss = systemRss(system);
    out.idleRss = { mb: rss.bytes / MB, processes: rss.processes, idleS };
    log(`  idle RSS ${out.idleRss.mb.toFixed(1)} MB over ${rss.processes} process(es)`);

    const { token: staffToken } = await api(system.url, "POST", "/operator/login", {
      body: { email: env.BOOTSTRAP_STAFF_EMAIL, password: env.BOOTSTRAP_STAFF_PASSWORD },
    });
    // Per-tenant rate limit raised to the maximum the API allows, so the load measures the path
    // rather than 429s (each request still runs the rate-limit script in Redis).
    const created = await api(system.url, "POST", "/admin/tenants", {
      token: staffToken,
      body: { name: "bench", rate_limit_per_minute: 10_000_000 },
    });
    const tenantId = created.tenant.id;
    const token = await serverToken(created.tenant.api_key, created.api_secret);
    await api(system.url, "PUT", `/v1/users/${USER_ID}`, { token, body: { custom: { name: "Bench User", plan: "pro", n: 42 } } });
    const check = await api(system.url, "GET", `/v1/users/${USER_ID}`, { token });
    if (check?.id !== USER_ID) throw new Error(`GET /v1/users/${USER_ID} answered ${JSON.stringify(check)}`);

    bare = startNode(join(benchDir, "bare-fastify.mjs"), {
      env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: namespace, BENCH_TENANT: tenantId },
      name: "bare-fastify",
    });
    const { url: bareUrl } = await bare.ready;
    const res = await fetch(`${bareUrl}/v1/users/${USER_ID}`);
    if (res.status !== 200) throw new Error(`bare route answered ${res.status}`);

    const gatewayPid = system.processes.at(-1)?.child.pid;
    log(
      `  load: full path and bare route GET /v1/users/${USER_ID}, ${opts.connections} connections, ` +
        `${opts.warmupS} s warm-up each, then ${opts.rounds} × ${opts.roundS} s rounds each, taking turns`,
    );
    // --cpu-prof: profile the gateway over the measured rounds (SIGUSR2 starts, SIGUSR2 writes).
    const profiling = Boolean(o.cpuProfDir && gatewayPid);
    const r = await load(
      [
        { name: "full", url: `${system.url}/v1/users/${USER_ID}`, headers: { authorization: `Bearer ${token}` }, pid: gatewayPid },
        { name: "bare", url: `${bareUrl}/v1/users/${USER_ID}`, pid: bare.child.pid },
      ],
      opts,
      () => profiling && process.kill(gatewayPid, "SIGUSR2"),
    );
    if (profiling) {
      process.kill(gatewayPid, "SIGUSR2");
      await sleep(1500);
      out.cpuProfile = join(o.cpuProfDir, `gateway-${gatewayPid}.cpuprofile`);
      log(`  CPU profile of the gateway over the measured rounds: ${out.cpuProfile}`);
    }
    out.machine = r.machine;
    if (r.machine) {
      const top = r.machine.otherTop.map((x) => `${x.comm}[${x.pid}] ${(x.cores * 100).toFixed(0)}%`).join(", ");
      log(`  machine over the rounds: ${r.machine.machineCores.toFixed(2)} cores busy; shared infra ${r.machine.infraCores.toFixed(2)}; other people's work ${r.machine.otherCores.toFixed(2)} cores${top ? ` (${top})` : ""}`);
    }
    out.full = r.targets.full;
    out.bare = r.targets.bare;
    for (const k of ["full", "bare"]) {
      const x = out[k];
      log(`  ${k}: ${x.rps.toFixed(0)} req/s (rounds ${x.roundRps.map((v) => v.toFixed(0)).join(", ")}), p50 ${x.p50.toFixed(2)} ms, p99 ${x.p99.toFixed(2)} ms; ${cpuNote(x.cpu)}`);
    }
    out.ratio = out.full.rps / out.bare.rps;
    return out;
  } finally {
    await system?.stop();
    await bare?.stop();
    await dropNamespaceSafely(namespace, infra, log).catch((e) => log(`  ${e.message}`));
  }
}

/** Bench 3, split mode: eight processes (seven services and the gateway), RSS after idling. */
export async function runSplitMemory({ infra, log, idleS = 5 }) {
  const { newNamespace } = await namespaceHelpers();
  const namespace = newNamespace("bench");
  let system;
  try {
    log(`bench 3: starting the split system (namespace ${namespace})`);
    system = await start({ env: systemEnv(infra, namespace), split: true });
    await sleep(idleS * 1000);
    const per = system.processes.map((p) => ({ name: p.name, mb: treeOf(p.child.pid).reduce((s, pid) => s + rssOf(pid), 0) / MB }));
    const mb = per.reduce((s, p) => s + p.mb, 0);
    log(`  split idle RSS ${mb.toFixed(1)} MB over ${per.length} processes`);
    return { mb, processes: per.length, per };
  } finally {
    await system?.stop();
    await dropNamespaceSafely(namespace, infra, log).catch((e) => log(`  ${e.message}`));
  }
}
