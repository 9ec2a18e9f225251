import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newIp, uniqueEmail } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

// One request followed across every process of a split system (workers in processes of their
// own), and across the one-process system's in-process calls: the gateway's route, the feed RPC,
// the fan-out task, the notify task and the webhook POST are spans of one trace, and the webhook
// receiver sees that trace's `traceparent`. Each process
// exports its spans over OTLP/HTTP (JSON) to a small collector in this test: the processes are
// separate, so an in-memory exporter inside one of them could not see the others' spans. The
// gateway's access log line for the request carries the trace id and the route span's id.

interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
}

/** An OTLP/HTTP receiver for `http/json`: every span exported to `POST /v1/traces`. */
async function startCollector(): Promise<{ url: string; spans: CollectedSpan[]; close(): Promise<void> }> {
  const spans: CollectedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/traces") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans?: {
            resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
            scopeSpans?: { spans?: Omit<CollectedSpan, "service">[] }[];
          }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a) => a.key === "service.name")?.value.stringValue ?? "";
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({ service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? "", name: s.name, kind: s.kind });
            }
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The hops the test follows, by process: split (workers apart) or the one-process system. */
const modes = {
  split: {
    gateway: "feeds-gateway",
    feed: "feeds-feed-api",
    fanout: "feeds-feed-worker",
    notify: "feeds-notification-worker",
  },
  "one-process": { gateway: "feeds-system", feed: "feeds-system", fanout: "feeds-system", notify: "feeds-system" },
} as const;

describe.each(Object.keys(modes) as (keyof typeof modes)[])("traces across the %s system", (mode) => {
  const p = modes[mode];
  let system: RunningSystem;
  let infra: Awaited<ReturnType<typeof testInfra>>;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let receiver: Receiver;
  let token = "";
  /** The gateway process's log lines (JSON). */
  const gatewayLines: Record<string, unknown>[] = [];
  const namespace = newNamespace(mode === "split" ? "traces_split" : "traces_one");
  const staff = { email: uniqueEmail("staff"), password: randomBytes(12).toString("base64url") };

  beforeAll(async () => {
    infra = await testInfra();
    collector = await startCollector();
    receiver = await startReceiver();
    system = await startSystem({
      // Split: every service and worker in a process of its own. One process: the in-process
      // calls (direct transport) still get a client and a server span each.
      ...(mode === "split" ? { split: true, workers: true } : {}),
      env: {
        ...infra.env,
        FEEDS_NAMESPACE: namespace,
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        // info: the gateway's access line (one per request) is written at info.
        LOG_LEVEL: "info",
        // The webhook receiver listens on loopback.
        WEBHOOK_ALLOW_PRIVATE: "1",
        // Tracing on, exported to the collector above as OTLP/HTTP JSON.
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        // Batches leave every 200 ms rather than the SDK's 5 s, so the test waits less.
        OTEL_BSP_SCHEDULE_DELAY: "200",
      },
    });
    // The process that answers HTTP is named "gateway" in either mode.
    const gateway = system.processes.find((p) => p.name === "gateway")!;
    createInterface({ input: gateway.child.stdout! }).on("line", (line) => {
      if (line.startsWith("{")) gatewayLines.push(JSON.parse(line) as Record<string, unknown>);
    });
    const login = await http("POST", "/operator/login", { url: system.url, ip: newIp(), body: staff });
    expect(login.status).toBe(200);
    const created = await http("POST", "/admin/tenants", { url: system.url, token: login.body.token, body: { name: "traces" } });
    expect(created.status).toBe(201);
    token = await createServerToken(created.body.tenant.api_key, created.body.api_secret);
  });

  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
    await collector?.close();
    if (infra) await dropNamespace(namespace, infra);
  });

  it("one POST of an activity with one follower and one webhook destination is one trace: gateway route, feed RPC, fan-out task, notify task, webhook POST; the receiver gets its traceparent, the gateway's access line names the trace", async () => {
    const hook = await http("POST", "/v1/webhooks", { url: system.url, token, body: { url: receiver.url("/traced") } });
    expect(hook.status).toBe(201);
    receiver.secret("/traced", hook.body.signing_secret);
    const follow = await http("POST", "/v1/feeds/timeline/fan/follows", { url: system.url, token, body: { target: "user:poster" } });
    expect([200, 201]).toContain(follow.status);

    const posted = await http("POST", "/v1/feeds/user/poster/activities", { url: system.url, token, body: { actor: "user:poster", verb: "post", object: "note:traced" } });
    expect(posted.status).toBe(201);
    const activityId = posted.body.id as string;

    // The webhook for this activity's activity.added event, verified, with its traceparent.
    const delivered = await receiver.waitFor(
      "the activity.added webhook",
      () => receiver.delivered("/traced").find((r) => r.event?.type === "activity.added" && r.event?.data?.id === activityId),
      30_000,
    );
    const traceparent = String(delivered.headers.traceparent ?? "");
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const [, traceId, parentId] = traceparent.split("-") as [string, string, string];

    // The route's span: the root of that trace, in the gateway.
    const route = "POST /v1/feeds/:group/:id/activities";
    const spansOf = () => collector.spans.filter((s) => s.traceId === traceId);
    const byId = (id: string) => spansOf().find((s) => s.spanId === id);
    // Every span from the webhook POST up to the root has been exported (each process batches).
    let chain: CollectedSpan[] = [];
    for (let waited = 0; waited < 20_000; waited += 200) {
      chain = [];
      for (let s = byId(parentId); s; s = s.parentSpanId ? byId(s.parentSpanId) : undefined) chain.push(s);
      if (chain.at(-1)?.name === route) break;
      await sleep(200);
    }
    const hops = chain.map((s) => `${s.service}: ${s.name}`).reverse();
    // From the root down: the receiver's parent is the webhook POST's span, under the webhooks
    // task, published by the notify task, published by the fan-out task, published by the feed
    // service's AddActivity (its outbox), called by the gateway's route.
    expect(hops[0]).toBe(`${p.gateway}: ${route}`);
    expect(chain.at(-1)?.parentSpanId).toBe("");
    const expected = [
      `${p.gateway}: ${route}`,
      `${p.gateway}: feeds.feed.v1.FeedService/AddActivity`,
      `${p.feed}: feeds.feed.v1.FeedService/AddActivity`,
      `${p.fanout}: fanout process`,
      `${p.notify}: notify process`,
      `${p.notify}: webhooks process`,
      `${p.notify}: webhook POST`,
    ];
    expect(hops.filter((h) => expected.includes(h))).toEqual(expected);
    // The POST is the receiver's parent; every span of the trace hangs under the one root.
    expect(chain[0]?.name).toBe("webhook POST");
    const roots = spansOf().filter((s) => s.parentSpanId === "");
    expect(roots.map((s) => s.name)).toEqual([route]);
    // The gateway's access line for the request names the trace and the route's span.
    const access = gatewayLines.filter((l) => l.msg === "request" && l.route === "/v1/feeds/:group/:id/activities" && l.method === "POST");
    expect(access.map((l) => [l.status, l.trace_id, l.span_id])).toEqual([[201, traceId, roots[0]?.spanId]]);
    // The fan-out's follower pass: a Graph RPC inside the fan-out task.
    const fanoutTask = chain.find((s) => s.name === "fanout process")!;
    expect(spansOf().some((s) => s.parentSpanId === fanoutTask.spanId && s.name === "feeds.graph.v1.GraphService/StreamFollowerFeeds")).toBe(true);
  });
});
