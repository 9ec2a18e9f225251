import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventOutbox, decodeEvent, eventSubject, newEvent, type FeedEvent } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The event outbox against real MongoDB-wire storage and NATS JetStream, in a namespace of its
// own: what a write publishes, and what the relay finishes for a writer that died.


describe("event outbox", { timeout: 30_000 }, () => {
  const env = createTestEnv("kit_events", { db: true, nats: { queues: ["notify"] } });
  const happened = new Set<string>();
  const outbox = () =>
    createEventOutbox({ db: env.db, nats: env.nats, log: env.log, collection: "test_outbox", confirm: async (e) => happened.has(String(e.data.thing)) });

  beforeAll(env.open);
  afterAll(env.close);

  /** Every event on the queue so far, in order (read without consuming: a direct get by sequence). */
  async function published(): Promise<FeedEvent[]> {
    const { nats } = env;
    const info = await nats.jsm.streams.info(nats.stream("notify"));
    const out: FeedEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await nats.jsm.streams.getMessage(nats.stream("notify"), { seq }).catch(() => null);
      if (m && m.subject === eventSubject(nats)) out.push(decodeEvent(m.data));
    }
    return out;
  }
  const ids = async () => (await published()).map((e) => e.id);
  const records = () => env.db.collection("test_outbox").countDocuments();
  const event = (thing: string) => newEvent("reaction.added", "t1", { thing });

  it("publishes the events of a write and keeps no record; a failed or declined write publishes nothing", async () => {
    const o = outbox();
    const ok = event("a");
    expect(await o.emit("t1", [ok], async () => "done")).toBe("done");
    const failed = event("b");
    await expect(o.emit("t1", [failed], async () => Promise.reject(new Error("write failed")))).rejects.toThrow("write failed");
    const declined = event("c");
    expect(await o.emit("t1", [declined], async () => false, { publishIf: (r) => r })).toBe(false);
    const now = await ids();
    expect(now).toContain(ok.id);
    expect(now).not.toContain(failed.id);
    expect(now).not.toContain(declined.id);
    expect(await records()).toBe(0);
  });

  it("relay: a dead writer's confirmed events are published once, unconfirmed ones dropped", async () => {
    const o = outbox();
    const confirmed = event("d");
    const unconfirmed = event("e");
    happened.add("d");
    // What a writer that died between recording and publishing leaves behind.
    await env.db.collection("test_outbox").insertOne({ _id: randomUUID() as never, tenant_id: "t1", events: [confirmed, unconfirmed], written: false, at: new Date(Date.now() - 5000) });
    expect(await o.relayOnce()).toBe(1);
    expect(await o.relayOnce()).toBe(0);
    const now = await ids();
    expect(now.filter((id) => id === confirmed.id)).toHaveLength(1);
    expect(now).not.toContain(unconfirmed.id);
    expect(await records()).toBe(0);
  });

  it("a record younger than the stale age is left to its writer", async () => {
    const o = outbox();
    await env.db.collection("test_outbox").insertOne({ _id: randomUUID() as never, tenant_id: "t1", events: [event("f")], written: true, at: new Date() });
    expect(await o.relayOnce()).toBe(0);
    expect(await records()).toBe(1);
    await env.db.collection("test_outbox").deleteMany({});
  });
});
