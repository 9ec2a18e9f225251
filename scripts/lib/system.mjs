// Starts the whole system as child processes: one process (gateway with every service mounted)
// or split (one process per service, the gateway reaching each over gRPC on loopback).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { root } from "./setup.mjs";
import { freePort } from "../infra.mjs";

export const services = ["tenancy", "identity", "feed", "graph", "engagement", "notification", "catalog"];

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

function spawnProcess(name, entry, env, { inherit = false } = {}) {
  const child = spawn(process.execPath, [join(root, entry)], {
    cwd: root,
    env: { ...process.env, ...env },
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
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5000).unref();
    });
  return { child, first, stop, name };
}

/**
 * @param {{ env: Record<string,string>, split?: boolean, port?: number, inherit?: boolean }} opts
 * @returns {Promise<{ url: string, staff: any, processes: any[], stop(): Promise<void> }>}
 */
export async function startSystem({ env, split = false, port = 0, inherit = false }) {
  const processes = [];
  const stopAll = async () => {
    await Promise.all(processes.map((p) => p.stop()));
  };
  // Each process handle: { name, child, first, stop(), kill(), restart() }.
  try {
    const urls = {};
    if (split) {
      // Ports first, so that every process (services reach their peers too) knows every URL.
      const ports = await Promise.all(services.map(() => freePort()));
      services.forEach((s, i) => {
        urls[`${s.toUpperCase()}_URL`] = `http://127.0.0.1:${ports[i]}`;
      });
      const started = services.map((s, i) =>
        startProcess(s, `services/${s}/dist/main.js`, { ...env, ...urls, GRPC_PORT: String(ports[i]) }, { inherit }),
      );
      processes.push(...started);
      await Promise.all(started.map((p) => p.first));
    }
    const gw = startProcess("gateway", "gateway/dist/main.js", { ...env, ...urls, PORT: String(port) }, { inherit });
    processes.push(gw);
    const ready = await gw.first;
    return { url: ready.url, staff: ready.staff, processes, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
