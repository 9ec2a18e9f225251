import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trace } from "@opentelemetry/api";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import type { StoredMsg } from "nats";
import { createOutbox, markTracingOn, type OutboxMessage, type PendingChange } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The trace context of a write that owes messages travels with its pending change: a message
// published by the outbox relay long after its writer died (outside any span) carries the
// writer's `traceparent`, as one its writer published would. Tracing off: the change keeps
// nothing and the message has no trace headers. Real MongoDB and JetStream; the tracer provider
// of this test process stands in for the hook's SDK (spans kept in memory, exported nowhere).

const ON = Symbol.for("feeds.tracing.on");

describe("outbox trace context", { timeout: 30_000 }, () => {
  const env = createTestEnv("kit_outbox_trace", { db: true, nats: { queues: ["notify"] } });
  const provider = new NodeTracerProvider();
  beforeAll(async () => {
    provider.register();
    markTracingOn(() => provider.shutdown());
    await env.open();
  });
  afterAll(async () => {
    (globalThis as { [ON]?: boolean })[ON] = false;
    await env.close();
    await provider.shutdown();
  });

  const subject = () => env.nats.subject("notify", "outbox_trace_test");
  const message = (id: string): OutboxMessage => ({ subject: subject(), msgId: `outbox-trace:${id}`, data: JSON.stringify({ id }) });
  const last = (): Promise<StoredMsg> => env.nats.jsm.streams.getMessage(env.nats.stream("notify"), { last_by_subj: subject() });

  /** A writer that records a change in its document and dies before publishing it. */
  async function deadWriter(id: string): Promise<{ change: PendingChange }> {
    const outbox = createOutbox({ db: env.db, nats: env.nats, log: env.log, graceMs: 0 });
    const change = outbox.change([message(id)], { at: new Date(Date.now() - 1000) });
    await env.db.collection("records").insertOne({ _id: id as never, ...outbox.forInsert(change) });
    return { change };
  }

  async function relay(): Promise<number> {
    const outbox = createOutbox({ db: env.db, nats: env.nats, log: env.log, graceMs: 0 });
    outbox.register("records");
    return outbox.relayOnce();
  }

  it("the relay publishes a dead writer's message with the writer's traceparent", async () => {
    const { traceId, change } = await trace.getTracer("test").startActiveSpan("writer", async (span) => {
      const written = await deadWriter("traced");
      span.end();
      return { traceId: span.spanContext().traceId, ...written };
    });
    expect(change.trace?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    // The relay runs outside any span: the context is the change's.
    expect(trace.getActiveSpan()).toBeUndefined();
    expect(await relay()).toBe(1);
    const msg = await last();
    expect(JSON.parse(msg.string())).toEqual({ id: "traced" });
    expect(msg.header.get("traceparent")).toBe(change.trace?.traceparent);
  });

  it("with tracing off, the change keeps no context and the message carries no trace headers", async () => {
    (globalThis as { [ON]?: boolean })[ON] = false;
    try {
      const { change } = await trace.getTracer("test").startActiveSpan("writer", async (span) => {
        const written = await deadWriter("untraced");
        span.end();
        return written;
      });
      expect(change).not.toHaveProperty("trace");
      expect(await relay()).toBe(1);
      const msg = await last();
      expect(JSON.parse(msg.string())).toEqual({ id: "untraced" });
      expect(msg.header?.get("traceparent") ?? "").toBe("");
    } finally {
      (globalThis as { [ON]?: boolean })[ON] = true;
    }
  });
});
