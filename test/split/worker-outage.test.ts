import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import type { RunningProcess, RunningSystem } from "../../scripts/lib/system.mjs";
import { http } from "../support/api.js";
import { scrape, total } from "../support/metrics.js";
import { startOwnSystem, type OwnSystem } from "../support/own-system.js";

// What Kubernetes sees of one sick part, on a split system of its own (workers in processes of
// their own, as the chart runs them): a stopped notify worker leaves the gateway ready on its own
// /readyz (the chart's probe) and the API answering, while /v1/health/ready and the readiness
// metric the FeedsNotReady alert reads name `worker:notify`. A service told to stop exits at once,
// although the gateway keeps an HTTP/2 session open to it.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const health = (url: string) => createClient(Health, createGrpcTransport({ baseUrl: url }));
const statusOf = (url: string, service: string) =>
  health(url)
    .check({ service }, { timeoutMs: 2000 })
    .then((r) => r.status);

describe("one sick worker, one stopping service", () => {
  let own: OwnSystem;
  let system: RunningSystem;
  let token = "";
  const probe = (path: string) => fetch(system.metrics.gateway!.replace(/\/metrics$/, path));
  const processNamed = (name: string): RunningProcess => system.processes.find((p) => p.name === name)!;

  beforeAll(async () => {
    own = await startOwnSystem("outage", { split: true, workers: true });
    ({ system } = own);
    token = own.tenant.token;
  });

  afterAll(async () => {
    await own?.stop();
  });

  it("with every notify worker stopped, the gateway stays ready and serves; the whole-system readiness and its metric name worker:notify (and webhooks, which that process runs)", async () => {
    const worker = system.workerUrls.notify!;
    expect(await statusOf(worker, "")).toBe(HealthCheckResponse_ServingStatus.SERVING);
    expect(await statusOf(worker, "liveness")).toBe(HealthCheckResponse_ServingStatus.SERVING);
    expect((await probe("/livez")).status).toBe(200);
    expect((await probe("/readyz")).status).toBe(200);
    expect((await http("GET", "/v1/health/ready", { url: system.url })).status).toBe(200);

    await processNamed("notify-worker").stop();
    // Readiness notices within the beats' window (5 s) and its cache.
    let whole = await http("GET", "/v1/health/ready", { url: system.url });
    for (let i = 0; i < 40 && whole.status === 200; i++) {
      await sleep(250);
      whole = await http("GET", "/v1/health/ready", { url: system.url });
    }
    expect(whole.status).toBe(503);
    const failing = (whole.body.checks as { name: string; ok: boolean }[]).filter((c) => !c.ok).map((c) => c.name);
    // The notify worker's process runs the webhook deliveries too.
    expect(failing.sort()).toEqual(["worker:notify", "worker:webhooks"]);
    // The series FeedsNotReady reads (deploy/helm/feeds/files/alerts.test.yaml fires on it).
    const m = await scrape(system.metrics.gateway);
    expect(total(m, "feeds_readiness_check", { check: "worker:notify" })).toBe(0);
    expect(total(m, "feeds_readiness_check", { check: "feed" })).toBe(1);

    // The gateway itself: live, ready, and answering writes and reads, while the worker is gone.
    for (let i = 0; i < 5; i++) {
      expect((await probe("/readyz")).status).toBe(200);
      const posted = await http("POST", "/v1/feeds/user/ann/activities", { url: system.url, token, body: { actor: "user:ann", verb: "post", object: `note:${i}` } });
      expect(posted.status).toBe(201);
      const read = await http("GET", "/v1/feeds/user/ann", { url: system.url, token });
      expect(read.status).toBe(200);
      expect(read.body.results.length).toBe(i + 1);
    }
    const readyz = await probe("/readyz");
    expect(((await readyz.json()) as { checks: { name: string }[] }).checks.map((c) => c.name).sort()).toEqual(
      ["catalog", "engagement", "feed", "graph", "identity", "notification", "redis", "tenancy"],
    );
  });

  it("a service told to stop finishes, tells the gateway's open HTTP/2 session to go away, and exits by itself", async () => {
    const feed = processNamed("feed");
    const url = system.urls.FEED_URL!;
    // The gateway holds a session to it: a call through the API opens one.
    expect((await http("GET", "/v1/feeds/user/ann", { url: system.url, token })).status).toBe(200);
    expect(await statusOf(url, "")).toBe(HealthCheckResponse_ServingStatus.SERVING);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => feed.child.once("exit", (code, signal) => resolve({ code, signal })));
    feed.child.kill("SIGTERM");
    // Without GOAWAY the server waits on the session for its 10 s fallback (or, before it, for good).
    const outcome = await Promise.race([exited, sleep(8000).then(() => "still running" as const)]);
    expect(outcome).toEqual({ code: 0, signal: null });
  });
});
