import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { freshRateWindow, http, newTenant, type TestTenant } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { labelValues, promqlMetricNames, sampleNames, scrape, total } from "../support/metrics.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

// Prometheus metrics, on a system of its own so that every figure moves only by what this file
// does: scrape, drive traffic, scrape again, and compare. The system labels one tenant by name in
// per-tenant metrics (METRICS_TOP_TENANTS=1) and gives up on a webhook after two attempts.

const HTTP = "feeds_http_request_duration_seconds";
const RPC = "feeds_rpc_duration_seconds";
const CACHE = "feeds_cache_requests_total";
const LAG = "feeds_fanout_lag_seconds";
const FEED_ROUTE = "/v1/feeds/:group/:id";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("metrics", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let url = "";
  let infra: Awaited<ReturnType<typeof testInfra>>;
  const namespace = newNamespace("metrics");
  const metrics = () => scrape(system.metrics.gateway);

  beforeAll(async () => {
    infra = await testInfra();
    receiver = await startReceiver();
    system = await startSystem({
      env: {
        ...infra.env,
        FEEDS_NAMESPACE: namespace,
        BUILD_VERSION: inject("buildVersion"),
        // The run's staff, so that the api helpers log in here as on the shared system.
        BOOTSTRAP_STAFF_EMAIL: inject("staffEmail"),
        BOOTSTRAP_STAFF_PASSWORD: inject("staffPassword"),
        TRUST_PROXY: "1",
        LOG_LEVEL: "fatal",
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_ATTEMPT_TIMEOUT_MS: "1000",
        WEBHOOK_RETRY_SCHEDULE_MS: "200",
        METRICS_TOP_TENANTS: "1",
      },
    });
    url = system.url;
  });

  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
    if (infra) await dropNamespace(namespace, infra);
  });

  /** Polls the gateway's scrape until `check` holds (figures that move after the answer). */
  async function until(what: string, check: (m: Map<string, number>) => boolean, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = await metrics();
      if (check(m)) return m;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  }

  const post = (server: string, feed: string, body: Record<string, unknown>) =>
    http("POST", `/v1/feeds/${feed.replace(":", "/")}/activities`, { url, token: server, body: { verb: "post", ...body } });

  let reader: TestTenant;
  let readerToken = "";
  const readCarol = () => http("GET", "/v1/feeds/user/carol?limit=10", { url, token: readerToken });

  it("counts requests by route template, method and status; 404s share one label; RPCs by service, method and code", async () => {
    reader = await newTenant({ url });
    readerToken = await reader.server();
    expect((await http("PUT", "/v1/users/carol", { url, token: readerToken, body: { custom: { name: "Carol" } } })).status).toBe(201);
    expect((await http("PUT", "/v1/objects/product/p1", { url, token: readerToken, body: { custom: { price: 5 } } })).status).toBe(201);
    expect((await post(readerToken, "user:carol", { actor: "user:carol", object: "note:1", refs: ["product:p1"] })).status).toBe(201);

    const before = await metrics();
    for (let i = 0; i < 5; i++) expect((await readCarol()).status).toBe(200);
    expect((await http("GET", `/v1/activities/${randomUUID()}`, { url, token: readerToken })).status).toBe(404);
    // Hostile paths: each would be a series of its own if the URL were the label.
    const junk = randomBytes(8).toString("hex");
    expect((await http("GET", `/nothing/${junk}`, { url })).status).toBe(404);
    expect((await http("DELETE", `/v1/feeds/user/carol/${junk}/x`, { url })).status).toBe(404);
    const after = await metrics();
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);

    expect(delta(`${HTTP}_count`, { route: FEED_ROUTE, method: "GET", status_code: "200" })).toBe(5);
    expect(delta(`${HTTP}_bucket`, { route: FEED_ROUTE, method: "GET", status_code: "200", le: "+Inf" })).toBe(5);
    expect(delta(`${HTTP}_sum`, { route: FEED_ROUTE, method: "GET", status_code: "200" })).toBeGreaterThan(0);
    expect(delta(`${HTTP}_count`, { route: "/v1/activities/:id", method: "GET", status_code: "404" })).toBe(1);
    expect(delta(`${HTTP}_count`, { route: "unmatched", method: "GET", status_code: "404" })).toBe(1);
    expect(delta(`${HTTP}_count`, { route: "unmatched", method: "DELETE", status_code: "404" })).toBe(1);
    expect([...after.keys()].filter((s) => s.includes(junk))).toEqual([]);
    expect(delta(`${RPC}_count`, { service: "feeds.feed.v1.FeedService", method: "ReadFeed", code: "OK" })).toBe(5);
    // Activity ids are UUIDs: this one reached the service, which answered NotFound.
    expect(delta(`${RPC}_count`, { service: "feeds.feed.v1.FeedService", method: "GetActivity", code: "NotFound" })).toBe(1);
  });

  it("exports its build, and times each MongoDB command its driver starts by command name once it answers", async () => {
    const DURATION = "feeds_mongodb_command_duration_seconds";
    const token = readerToken;
    const before = await metrics();
    // Unknown activity ids: each read misses every cache and asks MongoDB with a find.
    for (let i = 0; i < 3; i++) expect((await http("GET", `/v1/activities/${randomUUID()}`, { url, token })).status).toBe(404);
    const after = await metrics();
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    expect(total(after, "feeds_build_info", { version: inject("buildVersion"), node_version: process.version })).toBe(1);
    expect(labelValues(after, "feeds_build_info", "version").size).toBe(1);
    expect(delta(`${DURATION}_count`, { command: "find", outcome: "ok" })).toBeGreaterThanOrEqual(3);
    expect(delta(`${DURATION}_bucket`, { command: "find", outcome: "ok", le: "+Inf" })).toBe(delta(`${DURATION}_count`, { command: "find", outcome: "ok" }));
    expect(delta(`${DURATION}_sum`, { command: "find", outcome: "ok" })).toBeGreaterThan(0);
    // A command is timed when it answers, so never more are timed than were started.
    expect(total(after, `${DURATION}_count`)).toBeLessThanOrEqual(total(after, "feeds_mongodb_commands_total"));
    expect(total(after, `${DURATION}_count`)).toBeGreaterThan(0);
  });

  it("counts head, activity, user and object cache hits per key, and the miss after a write", async () => {
    const cache = (m: Map<string, number>, name: string, result: "hit" | "miss") => total(m, CACHE, { cache: name, result });
    const before = await metrics();
    for (let i = 0; i < 3; i++) expect((await readCarol()).status).toBe(200);
    const warm = await metrics();
    // Each warm page: one head, one activity, its actor user and its one object, all from cache.
    for (const name of ["head", "activity", "user", "object"]) {
      expect(cache(warm, name, "hit") - cache(before, name, "hit"), `${name} hits`).toBe(3);
      expect(cache(warm, name, "miss") - cache(before, name, "miss"), `${name} misses`).toBe(0);
    }
    // A write drops the cached user: the next page misses it once, the one after hits again.
    expect((await http("PUT", "/v1/users/carol", { url, token: readerToken, body: { custom: { name: "Caro" } } })).status).toBe(200);
    const page = await readCarol();
    expect(page.body.results[0].actor_user).toEqual({ id: "carol", custom: { name: "Caro" } });
    const cold = await metrics();
    expect(cache(cold, "user", "miss") - cache(warm, "user", "miss")).toBe(1);
    expect(cache(cold, "user", "hit") - cache(warm, "user", "hit")).toBe(0);
    expect((await readCarol()).status).toBe(200);
    expect(cache(await metrics(), "user", "hit") - cache(cold, "user", "hit")).toBe(1);
  });

  it("counts rate-limit refusals by kind", async () => {
    const limited = await newTenant({ url, rate_limit_per_minute: 3 });
    const token = await limited.server();
    await freshRateWindow(10);
    const before = await metrics();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await http("GET", "/v1/feeds/user/x", { url, token })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const after = await metrics();
    expect(total(after, "feeds_rate_limited_total", { kind: "normal" }) - total(before, "feeds_rate_limited_total", { kind: "normal" })).toBe(1);
    expect(total(after, `${HTTP}_count`, { route: FEED_ROUTE, status_code: "429" }) - total(before, `${HTTP}_count`, { route: FEED_ROUTE, status_code: "429" })).toBe(1);
  });

  it("times each fan-out once, to its last chunk, under a bounded tenant label (top 1 here, the rest `other`)", { timeout: 120_000 }, async () => {
    const a = await newTenant({ url });
    const b = await newTenant({ url });
    const [sa, sb] = await Promise.all([a.server(), b.server()]);
    const fanouts = (m: Map<string, number>) => total(m, `${LAG}_count`);
    const before = await metrics();
    // Tenant a fans out first, so it holds the one label.
    expect((await http("POST", "/v1/feeds/timeline/bob/follows", { url, token: sa, body: { target: "user:alice" } })).status).toBe(201);
    for (let i = 0; i < 2; i++) expect((await post(sa, "user:alice", { actor: "user:alice", object: `note:${i}` })).status).toBe(201);
    await until("tenant a's two fan-outs", (m) => fanouts(m) - fanouts(before) >= 2);
    expect((await http("POST", "/v1/feeds/timeline/dan/follows", { url, token: sb, body: { target: "user:erin" } })).status).toBe(201);
    expect((await post(sb, "user:erin", { actor: "user:erin", object: "note:b" })).status).toBe(201);
    // Two chunks (500 + 1 followers), shared out as chunk tasks: still one fan-out, timed once.
    for (let i = 0; i < 501; i += 100) {
      const follows = Array.from({ length: Math.min(100, 501 - i) }, (_, j) => ({ source: `timeline:f${i + j}`, target: "user:star" }));
      expect((await http("POST", "/v1/batch/follows", { url, token: sa, body: { follows } })).status).toBe(200);
    }
    const big = await post(sa, "user:star", { actor: "user:star", object: "note:big" });
    expect(big.status).toBe(201);
    const after = await until("every fan-out timed", (m) => fanouts(m) - fanouts(before) >= 4, 60_000);
    await sleep(500);
    const settled = await metrics();
    expect(fanouts(settled) - fanouts(before)).toBe(4);
    expect(total(settled, `${LAG}_count`, { tenant: a.id }) - total(before, `${LAG}_count`, { tenant: a.id })).toBe(3);
    expect(total(settled, `${LAG}_count`, { tenant: "other" }) - total(before, `${LAG}_count`, { tenant: "other" })).toBe(1);
    expect(labelValues(settled, `${LAG}_count`, "tenant")).toEqual(new Set([a.id, "other"]));
    expect(total(after, `${LAG}_sum`) - total(before, `${LAG}_sum`)).toBeGreaterThan(0);
    // The last follower's feed holds the big activity (the fan-out did run to its end).
    const feed = await http("GET", "/v1/feeds/timeline/f500", { url, token: sa });
    expect(feed.body.results.map((r: { id: string }) => r.id)).toContain(big.body.id);
  });

  it("counts webhook deliveries by outcome, the redelivery and the dead letter", async () => {
    const ok = await newTenant({ url });
    const failing = await newTenant({ url });
    const [so, sf] = await Promise.all([ok.server(), failing.server()]);
    receiver.behave("/down", () => 503);
    for (const [token, path] of [[so, "/up"], [sf, "/down"]] as const) {
      const res = await http("POST", "/v1/webhooks", { url, token, body: { url: receiver.url(path), events: ["activity.added"] } });
      expect(res.status).toBe(201);
    }
    const outcome = (m: Map<string, number>, o: string) => total(m, "feeds_webhook_deliveries_total", { outcome: o });
    const dlq = (m: Map<string, number>) => total(m, "feeds_queue_dlq_depth", { queue: "webhooks" });
    const before = await metrics();
    expect((await post(so, "user:u", { actor: "user:u", object: "note:1" })).status).toBe(201);
    expect((await post(sf, "user:u", { actor: "user:u", object: "note:1" })).status).toBe(201);
    // Two attempts for the failing one (the schedule has one wait), then the dead-letter stream;
    // the queue gauges are read from JetStream at most every 2 s.
    const after = await until("the delivery and the dead letter", (m) => outcome(m, "dead_lettered") > outcome(before, "dead_lettered") && dlq(m) > dlq(before));
    await sleep(300);
    const settled = await metrics();
    expect(outcome(settled, "delivered") - outcome(before, "delivered")).toBe(1);
    expect(outcome(settled, "retrying") - outcome(before, "retrying")).toBe(1);
    expect(outcome(settled, "dead_lettered") - outcome(before, "dead_lettered")).toBe(1);
    expect(dlq(after) - dlq(before)).toBe(1);
    expect(total(settled, "feeds_queue_redeliveries_total", { queue: "webhooks" }) - total(before, "feeds_queue_redeliveries_total", { queue: "webhooks" })).toBe(1);
    expect(receiver.requests.filter((r) => r.path === "/up")).toHaveLength(1);
    expect(receiver.requests.filter((r) => r.path === "/down")).toHaveLength(2);
  });

  it("exports every queue's pending, redelivered and dead-letter figures, readiness and Node's process metrics", async () => {
    // All work done: nothing waits or is being redelivered.
    const m = await until("idle queues", (s) => total(s, "feeds_queue_pending_messages") === 0);
    for (const name of ["feeds_queue_pending_messages", "feeds_queue_redelivered_messages", "feeds_queue_dlq_depth"]) {
      expect(labelValues(m, name, "queue"), name).toEqual(new Set(["fanout", "notify", "webhooks"]));
    }
    expect(total(m, "feeds_queue_redelivered_messages")).toBe(0);
    expect(total(m, "feeds_readiness_check", { check: "mongodb" })).toBe(1);
    expect(labelValues(m, "feeds_readiness_check", "check").size).toBe(14);
    for (const name of ["process_cpu_seconds_total", "process_resident_memory_bytes", "nodejs_heap_size_used_bytes", "nodejs_eventloop_lag_p99_seconds"]) {
      expect(m.has(name), name).toBe(true);
    }
  });

  it("every metric the Grafana dashboard and the alert rules query is in a scrape", async () => {
    const dashboard = JSON.parse(readFileSync(new URL("../../deploy/helm/feeds/files/dashboard.json", import.meta.url), "utf8"));
    const exprs: string[] = [];
    const walk = (panels: any[]) => {
      for (const p of panels ?? []) {
        for (const t of p.targets ?? []) exprs.push(t.expr);
        walk(p.panels);
      }
    };
    walk(dashboard.panels);
    // The rules' expressions: single-line, or a `|` block indented below `expr:`.
    const rules = readFileSync(new URL("../../deploy/helm/feeds/files/alerts.yaml", import.meta.url), "utf8");
    for (const m of rules.matchAll(/^(\s*)expr: ?(\|)?(.*)\n((?:\1\s+.*\n)*)/gm)) exprs.push(m[2] ? (m[4] ?? "") : (m[3] ?? ""));
    expect(exprs.length).toBeGreaterThan(25);
    const names = new Set(exprs.flatMap(promqlMetricNames));
    expect(names.size).toBeGreaterThan(12);
    const scraped = sampleNames(await metrics());
    expect([...names].filter((n) => !scraped.has(n))).toEqual([]);
  });
});
