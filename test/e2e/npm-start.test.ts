import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { freePort, portOpen } from "../../scripts/infra.mjs";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { scrape } from "../support/metrics.js";

// `npm start` (scripts/start.mjs) as a newcomer runs it: the gateway's Prometheus endpoint on
// METRICS_PORT (9464 unless set), every process's metrics URL printed, which local servers it
// found or started, and on Ctrl-C a clean stop that says what it leaves running. The storage,
// NATS and Redis of this run are passed as *_URL, so it starts none of its own.

const root = join(import.meta.dirname, "..", "..");
const urls = { mongoUrl: inject("mongoUrl"), natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl") };
let child: ChildProcess | null = null;
let namespace = "";

/** Runs `node scripts/start.mjs` until its banner is out; `output()` is everything it printed. */
async function start(args: string[], env: Record<string, string>) {
  namespace = newNamespace("start");
  let out = "";
  const c = spawn(process.execPath, [join(root, "scripts", "start.mjs"), ...args], {
    cwd: root,
    env: { ...process.env, MONGO_URL: urls.mongoUrl, NATS_URL: urls.natsUrl, REDIS_URL: urls.redisUrl, FEEDS_NAMESPACE: namespace, PORT: "0", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child = c;
  c.stdout.on("data", (d) => (out += String(d)));
  c.stderr.on("data", (d) => (out += String(d)));
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => out.includes("Ctrl-C stops the system.") && (clearInterval(timer), resolve()), 100);
    c.once("exit", (code) => (clearInterval(timer), reject(new Error(`npm start exited with ${code}:\n${out}`))));
  });
  return { output: () => out, child: c };
}

/** Ctrl-C: resolves with the exit code. */
const interrupt = (c: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    c.once("exit", (code) => resolve(code));
    c.kill("SIGINT");
  });

/** The metrics URLs of the banner, by process name. */
const metricsOf = (out: string) =>
  Object.fromEntries([...out.matchAll(/^ {2}([a-z-]+)\s+(http:\/\/127\.0\.0\.1:\d+\/metrics)$/gm)].map((m) => [m[1] as string, m[2] as string]));

const metricsPortTaken = await portOpen(9464);

afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) await interrupt(child);
  child = null;
  if (namespace) await dropNamespace(namespace, urls);
});

describe("npm start", { timeout: 120_000 }, () => {
  it.skipIf(metricsPortTaken)("serves the gateway's metrics on 9464 by default (skipped when 9464 is taken here: another npm start)", async () => {
    const { output, child: c } = await start([], {});
    expect(metricsOf(output())).toEqual({ gateway: "http://127.0.0.1:9464/metrics" });
    const m = await scrape("http://127.0.0.1:9464/metrics");
    expect([...m.keys()].filter((k) => k.startsWith("feeds_readiness_check{")).length).toBeGreaterThan(0);
    expect(output()).toMatch(/^Servers:\n {2}\(MONGO_URL, NATS_URL and REDIS_URL given/m);
    expect(await interrupt(c)).toBe(0);
    expect(output()).toMatch(/stopped\. No local server was started by this checkout/);
    expect(await portOpen(9464)).toBe(false);
  });

  it("split: the gateway takes METRICS_PORT, every other process a free port, and each URL is printed and answers", async () => {
    const port = await freePort();
    const { output, child: c } = await start(["--split"], { METRICS_PORT: String(port) });
    const metrics = metricsOf(output());
    expect(metrics.gateway).toBe(`http://127.0.0.1:${port}/metrics`);
    expect(Object.keys(metrics).sort()).toEqual(["catalog", "engagement", "feed", "gateway", "graph", "identity", "notification", "tenancy"]);
    expect(new Set(Object.values(metrics)).size).toBe(8);
    for (const url of Object.values(metrics)) expect((await scrape(url)).has("process_cpu_seconds_total"), url).toBe(true);
    expect(await interrupt(c)).toBe(0);
  });
});
