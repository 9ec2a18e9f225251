import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Redis } from "ioredis";
import { connect } from "nats";
import { afterAll, describe, expect, inject, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { workers } from "../../scripts/lib/system.mjs";
import { dropNamespace, newNamespace } from "../support/namespace.js";

// FEEDS_ROLE splits a service process as the Helm chart deploys it: "api" serves the routes and
// runs none of the service's background work, "worker" runs the background work and serves
// grpc.health.v1 alone. e2e-split runs its system that way; each role is also started here on
// its own, in a namespace of its own, and judged by what the workers leave behind: the beat that
// readiness reads, and the JetStream consumers.

const root = new URL("../..", import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const grpc = (url: string) => createGrpcTransport({ baseUrl: url });
/** The code an unsigned call answers ("OK" if it succeeds). */
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "OK",
    (e: unknown) => Code[ConnectError.from(e).code],
  );
/** Which worker loops (worker-beats names) each service's worker process runs. */
const beatsOf: Record<string, string[]> = { feed: ["fanout"], graph: ["follow"], notification: ["notify", "webhooks"] };

const urls = () => ({ mongoUrl: inject("mongoUrl"), natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl") });

/** A service process of its own: the test servers, a namespace, a role, any free ports. */
const envOf = (namespace: string, role: string) => ({
  PATH: process.env.PATH,
  MONGO_URL: inject("mongoUrl"),
  NATS_URL: inject("natsUrl"),
  REDIS_URL: inject("redisUrl"),
  FEEDS_NAMESPACE: namespace,
  FEEDS_INTERNAL_KEY: randomBytes(32).toString("base64"),
  // Read by the notification processes alone.
  FEEDS_WEBHOOK_KEY: randomBytes(32).toString("base64"),
  FEEDS_ROLE: role,
  GRPC_PORT: "0",
  METRICS_PORT: "0",
  LOG_LEVEL: "warn",
});

/** Starts `services/<service>/dist/main.js` with FEEDS_ROLE=role; resolves once it listens. */
async function startRole(service: string, role: string, namespace: string): Promise<{ child: ChildProcess; url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [join(root, `services/${service}/dist/main.js`)], {
    env: envOf(namespace, role),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      // A service's HTTP/2 server closes once its clients' sessions end, and this test's stay open.
      setTimeout(() => child.kill("SIGKILL"), 3000).unref();
    });
  const started = await new Promise<{ role: string; port: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${service} (${role}) did not start in 60 s`)), 60_000);
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (!line.startsWith("{")) return;
      const msg = JSON.parse(line) as { role?: string; port?: number };
      if (msg.port === undefined) return;
      clearTimeout(timer);
      resolve({ role: msg.role ?? "", port: msg.port });
    });
    child.once("exit", (code) => reject(new Error(`${service} (${role}) exited with ${code}`)));
  }).catch(async (e: unknown) => {
    await stop();
    throw e;
  });
  expect(started.role).toBe(role);
  return { child, url: `http://127.0.0.1:${started.port}`, stop };
}

/** The worker loops of `namespace` that beat in the last five seconds, and its JetStream consumers. */
async function traces(namespace: string): Promise<{ beats: string[]; consumers: string[] }> {
  const redis = new Redis(inject("redisUrl"));
  const nc = await connect({ servers: inject("natsUrl") });
  try {
    const beats: string[] = [];
    for (const w of ["fanout", "follow", "notify", "webhooks"]) {
      if ((await redis.zcount(`${namespace}:worker:${w}`, Date.now() - 5000, "+inf")) > 0) beats.push(w);
    }
    const consumers: string[] = [];
    const jsm = await nc.jetstreamManager();
    for await (const s of jsm.streams.list()) {
      if (!s.config.name.startsWith(`${namespace}_`)) continue;
      for await (const c of jsm.consumers.list(s.config.name)) consumers.push(c.name);
    }
    return { beats: beats.sort(), consumers: consumers.sort() };
  } finally {
    redis.disconnect();
    await nc.drain();
  }
}

describe("FEEDS_ROLE: a service's routes and its workers in processes of their own", () => {
  const namespaces: string[] = [];
  afterAll(async () => {
    for (const ns of namespaces) await dropNamespace(ns, urls());
  });

  it("e2e-split runs every worker of the chart in its own process, answering grpc.health.v1 and no service route", async () => {
    expect(Object.keys(inject("workers")).sort()).toEqual(Object.keys(workers).sort());
    const feedUrl = inject("serviceUrls").FEED_URL;
    if (!feedUrl) throw new Error("no FEED_URL: e2e-split runs every service in a process of its own");
    // Unsigned calls: the feed service's own process refuses the caller, a worker has no such route.
    expect(await codeOf(createClient(FeedService, grpc(feedUrl)).getActivity({}))).toBe("Unauthenticated");
    for (const [name, w] of Object.entries(inject("workers"))) {
      expect((await createClient(Health, grpc(w.url)).check({ service: "" })).status, name).toBe(HealthCheckResponse_ServingStatus.SERVING);
      expect(await codeOf(createClient(FeedService, grpc(w.url)).getActivity({})), name).toBe("Unimplemented");
    }
  });

  for (const service of Object.values(workers)) {
    it(`${service}: "api" serves the routes and runs no worker; "worker" runs ${beatsOf[service]?.join(" and ")} and serves health alone`, { timeout: 120_000 }, async () => {
      const namespace = newNamespace("role");
      namespaces.push(namespace);
      const api = await startRole(service, "api", namespace);
      try {
        expect((await createClient(Health, grpc(api.url)).check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
        // A route of its own answers (refusing the unsigned caller); FeedService only on feed.
        expect(await codeOf(createClient(FeedService, grpc(api.url)).getActivity({}))).toBe(service === "feed" ? "Unauthenticated" : "Unimplemented");
        await sleep(2500); // a worker would have beaten twice by now
        expect(await traces(namespace)).toEqual({ beats: [], consumers: [] });
      } finally {
        await api.stop();
      }

      const worker = await startRole(service, "worker", namespace);
      try {
        expect((await createClient(Health, grpc(worker.url)).check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
        expect(await codeOf(createClient(FeedService, grpc(worker.url)).getActivity({}))).toBe("Unimplemented");
        let seen = await traces(namespace);
        for (let i = 0; i < 50 && seen.beats.length < (beatsOf[service]?.length ?? 0); i++) {
          await sleep(200);
          seen = await traces(namespace);
        }
        expect(seen.beats).toEqual(beatsOf[service]);
        expect(seen.consumers.length).toBeGreaterThanOrEqual(seen.beats.length);
      } finally {
        await worker.stop();
      }
    });
  }

  it("a service without background work refuses the worker role, and an unknown role stops the process", { timeout: 120_000 }, () => {
    const namespace = newNamespace("role");
    namespaces.push(namespace);
    const run = (role: string) =>
      spawnSync(process.execPath, [join(root, "services/catalog/dist/main.js")], {
        env: envOf(namespace, role),
        encoding: "utf8",
        timeout: 60_000,
      });
    const worker = run("worker");
    expect(worker.status).not.toBe(0);
    expect(worker.stderr).toContain("FEEDS_ROLE: the catalog service has no background work to run as a worker");
    const unknown = run("workers");
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain("FEEDS_ROLE");
  });
});
