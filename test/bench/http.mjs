// Bench 1 (full path vs bare route) and bench 3 (idle RSS, one process and split).
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { startSystem } from "../../scripts/lib/system.mjs";
import { api, benchDir, MB, namespaceHelpers, rssOf, serverToken, sleep, startNode, treeOf } from "./lib.mjs";

const USER_ID = "bench-user";

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

function systemEnv(infra, namespace, extra = {}) {
  return {
    MONGO_URL: infra.mongoUrl,
    NATS_URL: infra.natsUrl,
    REDIS_URL: infra.redisUrl,
    FEEDS_MASTER_KEY: infra.masterKey,
    BUILD_VERSION: infra.version,
    FEEDS_NAMESPACE: namespace,
    BOOTSTRAP_STAFF_EMAIL: `staff@${namespace.replace(/_/g, "-")}.bench`,
    BOOTSTRAP_STAFF_PASSWORD: randomBytes(16).toString("base64url"),
    LOG_LEVEL: "warn",
    ...extra,
  };
}

/** Sum of VmRSS over the system's processes and their descendants. */
function systemRss(system) {
  const pids = system.processes.flatMap((p) => (p.child.pid ? treeOf(p.child.pid) : []));
  return { bytes: pids.reduce((s, pid) => s + rssOf(pid), 0), processes: pids.length };
}

async function load(url, headers, o) {
  const w = startNode(join(benchDir, "load-worker.mjs"), {
    args: [JSON.stringify({ url, headers, connections: o.connections, durationS: o.durationS, warmupS: o.warmupS })],
    name: "load-worker",
    timeoutMs: (o.durationS + o.warmupS + 60) * 1000,
  });
  return w.result;
}

/**
 * @param {{ infra: any, log: (...a: any[]) => void, connections?: number, durationS?: number,
 *   warmupS?: number, idleS?: number, cpuProfDir?: string }} o
 */
export async function runHttp(o) {
  const { infra, log } = o;
  const opts = { connections: o.connections ?? 20, durationS: o.durationS ?? 10, warmupS: o.warmupS ?? 2 };
  const idleS = o.idleS ?? 5;
  const { newNamespace, dropNamespace } = await namespaceHelpers();
  const namespace = newNamespace("bench");
  const env = systemEnv(infra, namespace, o.cpuProfDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${o.cpuProfDir}` } : {});
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

    log(`  load: full path GET /v1/users/${USER_ID}, ${opts.connections} connections, ${opts.warmupS}+${opts.durationS} s`);
    out.full = await load(`${system.url}/v1/users/${USER_ID}`, { authorization: `Bearer ${token}` }, opts);
    log(`  full: ${out.full.rps.toFixed(0)} req/s, p50 ${out.full.p50.toFixed(2)} ms, p99 ${out.full.p99.toFixed(2)} ms`);
    await system.stop();
    system = undefined;

    bare = startNode(join(benchDir, "bare-fastify.mjs"), {
      env: { MONGO_URL: infra.mongoUrl, FEEDS_NAMESPACE: namespace, BENCH_TENANT: tenantId },
      name: "bare-fastify",
    });
    const { url } = await bare.ready;
    const res = await fetch(`${url}/v1/users/${USER_ID}`);
    if (res.status !== 200) throw new Error(`bare route answered ${res.status}`);
    log(`  load: bare Fastify + findOne, same load`);
    out.bare = await load(`${url}/v1/users/${USER_ID}`, {}, opts);
    log(`  bare: ${out.bare.rps.toFixed(0)} req/s, p50 ${out.bare.p50.toFixed(2)} ms, p99 ${out.bare.p99.toFixed(2)} ms`);
    out.ratio = out.full.rps / out.bare.rps;
    return out;
  } finally {
    await system?.stop();
    await bare?.stop();
    await dropNamespace(namespace, infra).catch((e) => log(`  dropNamespace ${namespace}: ${e.message}`));
  }
}

/** Bench 3, split mode: eight processes (seven services and the gateway), RSS after idling. */
export async function runSplitMemory({ infra, log, idleS = 5 }) {
  const { newNamespace, dropNamespace } = await namespaceHelpers();
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
    await dropNamespace(namespace, infra).catch((e) => log(`  dropNamespace ${namespace}: ${e.message}`));
  }
}
