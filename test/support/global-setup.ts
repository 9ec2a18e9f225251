import { randomBytes } from "node:crypto";
import type { TestProject } from "vitest/node";
import { startSystem } from "../../scripts/lib/system.mjs";
import { dropNamespace, newNamespace } from "./namespace.js";
import { testInfra } from "./infra.js";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    /** The gateway process's Prometheus `GET /metrics` URL. */
    metricsUrl: string;
    /** Every process's `GET /metrics` URL, by process name (one: gateway; split: eight). */
    metricsUrls: Record<string, string>;
    namespace: string;
    staffEmail: string;
    staffPassword: string;
    mongoUrl: string;
    natsUrl: string;
    redisUrl: string;
    masterKey: string;
    webhookKey: string;
    buildVersion: string;
    /** Split mode: each worker process (FEEDS_ROLE=worker) by worker name; empty otherwise. */
    workers: Record<string, { url: string; pid: number }>;
    /** Split mode: `<SERVICE>_URL` of each service process; empty otherwise. */
    serviceUrls: Record<string, string>;
  }
}

/** One running system for the end-to-end files, in a namespace of its own; `redisUrl`: on that
 * Redis instead of the shared one. */
export async function startForProject(project: TestProject, split: boolean, workers = false, opts: { redisUrl?: string; prefix?: string } = {}) {
  const shared = await testInfra();
  const infra = opts.redisUrl ? { ...shared, redisUrl: opts.redisUrl, env: { ...shared.env, REDIS_URL: opts.redisUrl } } : shared;
  const namespace = newNamespace(opts.prefix ?? (split ? "split" : "e2e"));
  const staffEmail = `staff@${namespace.replace(/_/g, "-")}.test`;
  const staffPassword = randomBytes(16).toString("base64url");
  const system = await startSystem({
    split,
    workers,
    env: {
      ...infra.env,
      FEEDS_NAMESPACE: namespace,
      BOOTSTRAP_STAFF_EMAIL: staffEmail,
      BOOTSTRAP_STAFF_PASSWORD: staffPassword,
      // One proxy hop: tests give each client its own address as the right-most (or only)
      // X-Forwarded-For entry, as the proxy in front of the gateway would append it.
      TRUST_PROXY: "1",
      WEBHOOK_ALLOW_PRIVATE: "1",
      LOG_LEVEL: "warn",
    },
  });
  project.provide("baseUrl", system.url);
  project.provide("metricsUrl", system.metrics.gateway ?? "");
  project.provide("metricsUrls", system.metrics);
  project.provide("namespace", namespace);
  project.provide("staffEmail", staffEmail);
  project.provide("staffPassword", staffPassword);
  project.provide("mongoUrl", infra.mongoUrl);
  project.provide("natsUrl", infra.natsUrl);
  project.provide("redisUrl", infra.redisUrl);
  project.provide("masterKey", infra.env.FEEDS_MASTER_KEY);
  project.provide("webhookKey", infra.env.FEEDS_WEBHOOK_KEY);
  project.provide("buildVersion", infra.env.BUILD_VERSION);
  project.provide("serviceUrls", system.urls);
  project.provide(
    "workers",
    Object.fromEntries(
      Object.entries(system.workerUrls).map(([w, url]) => [w, { url, pid: system.processes.find((p) => p.name === `${w}-worker`)?.child.pid ?? 0 }]),
    ),
  );
  return async () => {
    await reportTaskLatency(split ? "e2e-split" : "e2e", Object.values(system.metrics));
    await system.stop();
    await dropNamespace(namespace, infra);
  };
}

/**
 * After the run, under the whole suite's load: the longest publish-to-done time of each queue's
 * tasks (a follow's history copy is fanout/follow, an event's notification notify/events), from
 * every process's /metrics. Printed for the run's log; a scrape that fails prints why.
 */
async function reportTaskLatency(label: string, urls: string[]): Promise<void> {
  const longest = new Map<string, number>();
  for (const url of urls) {
    try {
      const text = await (await fetch(url)).text();
      for (const m of text.matchAll(/^feeds_queue_task_latency_max_seconds\{([^}]*)\} (\S+)$/gm)) {
        const labels = Object.fromEntries([...(m[1] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
        const key = `${labels.queue}/${labels.consumer}`;
        longest.set(key, Math.max(longest.get(key) ?? 0, Number(m[2])));
      }
    } catch (e) {
      process.stdout.write(`[${label}] task latency: ${url} not scraped (${String(e)})\n`);
    }
  }
  const figures = [...longest].sort().map(([k, s]) => `${k} ${(s * 1000).toFixed(0)} ms`);
  process.stdout.write(`[${label}] slowest task, publish to done, over the whole run: ${figures.join(", ") || "none"}\n`);
}

/** The one-process system (the default, as `npm start` runs it). */
export default function setup(project: TestProject) {
  return startForProject(project, false);
}
