// Starts the whole system as child processes: one process (system/: every service and the gateway)
// or split (one process per service, gateway/ reaching each over gRPC on loopback).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, connect } from "node:net";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { root } from "./setup.mjs";
import { freePort } from "../infra.mjs";

export const services = ["tenancy", "identity", "feed", "graph", "engagement", "notification", "catalog"];

/**
 * The workers that can run as processes of their own (FEEDS_ROLE=worker), each with the service
 * whose code it runs; that service's process then serves its routes only (FEEDS_ROLE=api). The
 * notify worker's process also delivers webhooks. The Helm chart deploys the same split.
 */
export const workers = { fanout: "feed", follow: "graph", notify: "notification" };

function startProcess(name, entry, env, { inherit = false } = {}) {
  const handle = spawnProcess(name, entry, env, { inherit });
  /** Kills the process (SIGKILL: a crash) and starts it again with the same environment. */
  handle.restart = async () => {
    await new Promise((resolve) => {
      if (handle.child.exitCode !== null || handle.child.signalCode !== null) return resolve();
      handle.child.once("exit", () => resolve());
      handle.child.kill("SIGKILL");
    });
    const next = spawnProcess(name, entry, env, { inherit });
    Object.assign(handle, { child: next.child, first: next.first, stop: next.stop });
    await next.first;
  };
  handle.kill = () =>
    new Promise((resolve) => {
      if (handle.child.exitCode !== null || handle.child.signalCode !== null) return resolve();
      handle.child.once("exit", () => resolve());
      handle.child.kill("SIGKILL");
    });
  return handle;
}

/**
 * A TCP balancer on a free loopback port in front of several processes of one service, as a
 * Kubernetes Service's ClusterIP is: each new connection goes to the next backend that is not
 * drained (round robin); a connection stays with its backend. `drain(i)` takes backend i out of
 * rotation for new connections, as the endpoints controller does with a terminating pod.
 */
async function startBalancer(backendPorts) {
  const drained = new Set();
  const sockets = new Set();
  let next = 0;
  const server = createServer((client) => {
    const live = backendPorts.map((_, i) => i).filter((i) => !drained.has(i));
    if (live.length === 0) return client.destroy();
    const i = live[next++ % live.length];
    const upstream = connect(backendPorts[i], "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  const port = await freePort();
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    port,
    drain: (i) => drained.add(i),
    undrain: (i) => drained.delete(i),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The key that seals a service's secrets at rest, given only to the processes that run it. */
const atRestKeys = { tenancy: "FEEDS_MASTER_KEY", notification: "FEEDS_WEBHOOK_KEY" };

// Secrets a process gets only when its own env names them, never from this process's env.
const withheld = ["FEEDS_MASTER_KEY", "FEEDS_WEBHOOK_KEY", "FEEDS_INTERNAL_KEY", "FEEDS_SERVICE_KEY", "FEEDS_CALLER_KEYS"];

function spawnProcess(name, entry, env, { inherit = false } = {}) {
  const childEnv = { ...process.env, ...env };
  for (const k of withheld) if (!(k in env)) delete childEnv[k];
  // Every entry point runs under the OpenTelemetry hook (a no-op unless OTEL_* asks for traces).
  const child = spawn(process.execPath, ["--import", pathToFileURL(join(root, "kit/dist/otel.js")).href, join(root, entry)], {
    cwd: root,
    env: childEnv,
    stdio: ["ignore", "pipe", inherit ? "inherit" : "pipe"],
  });
  const lines = createInterface({ input: child.stdout });
  const stderrTail = [];
  child.stderr?.on("data", (d) => {
    stderrTail.push(String(d));
    if (stderrTail.length > 50) stderrTail.shift();
  });
  const first = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 60 s\n${stderrTail.join("")}`)), 60_000);
    lines.on("line", (line) => {
      try {
        const msg = JSON.parse(line);
        if (msg.ready || msg.port !== undefined) {
          clearTimeout(timer);
          resolve(msg);
        }
      } catch {
        /* ordinary log line */
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}\n${stderrTail.join("")}`));
    });
  });
  // SIGTERM, then SIGKILL after 5 s; the timer is not unref'd, so a caller that awaits stop()
  // cannot exit (and leave the process running) before the process is gone.
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill("SIGKILL"), 5000);
      child.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill("SIGTERM");
    });
  return { child, first, stop, name };
}

/**
 * Split mode gives FEEDS_MASTER_KEY to the tenancy process alone, FEEDS_WEBHOOK_KEY to the
 * processes that run notification alone (its service and the notify worker), and each process only
 * its own service keys (FEEDS_SERVICE_KEY, and a service's FEEDS_CALLER_KEYS), derived from the
 * root FEEDS_INTERNAL_KEY as `npm run service-keys` does; the root itself goes to the one-process
 * system only. The root and the webhook key are fresh ones unless `env` names them (a system
 * started again on data of an earlier one needs that one's FEEDS_WEBHOOK_KEY).
 * With `workers` (split only), each of `workers` runs in a process of its own, as the chart runs it.
 * With `replicas` (split only), a service runs that many processes behind a TCP balancer whose
 * address is the service's URL (`balancers[service]`, processes named `<service>-<i>`); with
 * `gateways`, that many gateway processes (`gatewayUrls`, named `gateway-<i>` after the first).
 * @param {{ env: Record<string,string>, split?: boolean, workers?: boolean, port?: number, inherit?: boolean, replicas?: Record<string, number>, gateways?: number }} opts
 * @returns {Promise<{ url: string, urls: Record<string,string>, workerUrls: Record<string,string>, metrics: Record<string,string>, staff: any, processes: any[], balancers: Record<string, any>, gatewayUrls: string[], stop(): Promise<void> }>}
 */
export async function startSystem({ env: given, split = false, workers: splitWorkers = false, port = 0, inherit = false, replicas = {}, gateways = 1 }) {
  const fresh = () => randomBytes(32).toString("base64");
  const env = { ...given, FEEDS_INTERNAL_KEY: given.FEEDS_INTERNAL_KEY ?? fresh(), FEEDS_WEBHOOK_KEY: given.FEEDS_WEBHOOK_KEY ?? fresh() };
  // Many systems and processes share one host here: each metrics port is a free one unless given
  // (the gateway's; services always take a free one). Each process's `metrics` names it.
  const gatewayMetricsPort = given.METRICS_PORT ?? "0";
  env.METRICS_PORT = "0";
  const { FEEDS_MASTER_KEY: _, FEEDS_WEBHOOK_KEY: __, FEEDS_INTERNAL_KEY: root, ...withoutKeys } = env;
  // Built by now (the processes run dist/): kit derives the keys.
  const keysOf = split ? (await import("@feeds/kit")).processKeyEnv : null;
  const ownKeys = (signer, serves) => keysOf(Buffer.from(root, "base64"), signer, serves);
  // Each process gets the at-rest key of the service whose code it runs, and no other.
  const envOf = (service) => {
    const key = atRestKeys[service];
    return key && env[key] ? { ...withoutKeys, [key]: env[key] } : withoutKeys;
  };
  const processes = [];
  const balancers = {};
  const stopAll = async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await Promise.all(Object.values(balancers).map((b) => b.close()));
  };
  // Each process handle: { name, child, first, stop(), kill(), restart() }.
  try {
    const urls = {};
    const workerUrls = {};
    if (split) {
      // Ports first, so that every process (services reach their peers too) knows every URL.
      const ports = await Promise.all(services.map(() => freePort()));
      // A replicated service: its processes on ports of their own, its URL the balancer's.
      const replicaPorts = {};
      for (const s of services) {
        if ((replicas[s] ?? 1) < 2) continue;
        replicaPorts[s] = await Promise.all(Array.from({ length: replicas[s] }, () => freePort()));
        balancers[s] = await startBalancer(replicaPorts[s]);
      }
      services.forEach((s, i) => {
        urls[`${s.toUpperCase()}_URL`] = `http://127.0.0.1:${balancers[s]?.port ?? ports[i]}`;
      });
      const apiOnly = new Set(splitWorkers ? Object.values(workers) : []);
      const serviceEnv = (s, grpcPort) => ({ ...envOf(s), ...ownKeys(s, s), ...urls, GRPC_PORT: String(grpcPort), ...(apiOnly.has(s) ? { FEEDS_ROLE: "api" } : {}) });
      const started = services.flatMap((s, i) =>
        replicaPorts[s]
          ? replicaPorts[s].map((p, r) => startProcess(`${s}-${r}`, `services/${s}/dist/main.js`, serviceEnv(s, p), { inherit }))
          : [startProcess(s, `services/${s}/dist/main.js`, serviceEnv(s, ports[i]), { inherit })],
      );
      if (splitWorkers) {
        for (const [w, s] of Object.entries(workers)) {
          const grpcPort = await freePort();
          workerUrls[w] = `http://127.0.0.1:${grpcPort}`;
          const workerEnv = { ...envOf(s), ...ownKeys(`${s}-worker`), ...urls, GRPC_PORT: String(grpcPort), FEEDS_ROLE: "worker" };
          started.push(startProcess(`${w}-worker`, `services/${s}/dist/main.js`, workerEnv, { inherit }));
        }
      }
      processes.push(...started);
      await Promise.all(started.map((p) => p.first));
    }
    // Split, the services run elsewhere: the gateway has no use for their at-rest keys, and signs
    // as itself alone. Either way the process that answers HTTP is named "gateway".
    const gwEnv = { ...(split ? { ...withoutKeys, ...ownKeys("gateway") } : env), ...urls, PORT: String(port), METRICS_PORT: gatewayMetricsPort };
    const gw = startProcess("gateway", split ? "gateway/dist/main.js" : "system/dist/main.js", gwEnv, { inherit });
    processes.push(gw);
    const ready = await gw.first;
    const gatewayUrls = [ready.url];
    for (let i = 1; i < gateways; i++) {
      const more = startProcess(`gateway-${i}`, split ? "gateway/dist/main.js" : "system/dist/main.js", { ...gwEnv, PORT: "0", METRICS_PORT: "0" }, { inherit });
      processes.push(more);
      gatewayUrls.push((await more.first).url);
    }
    const metrics = Object.fromEntries(
      await Promise.all(processes.map(async (p) => [p.name, `http://127.0.0.1:${(await p.first).metrics}/metrics`])),
    );
    return { url: ready.url, urls, workerUrls, metrics, staff: ready.staff, processes, balancers, gatewayUrls, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
