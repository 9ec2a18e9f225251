import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, eventSubject, onceFilter, onceUpdate, type AppliedIds, type PendingChange } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The outbox's targets against real MongoDB-wire storage and NATS JetStream: applied ids cleared
// by a callback (documents another service owns), a writer's clear that came after the grace
// leaving the target's id (a relay may still hold the change), the relay's "drop", and two relays
// claiming a document one at a time.

const GRACE = 100;

interface Counter {
  _id: string;
  n: number;
  applied?: string[];
}

describe("outbox targets", { timeout: 30_000 }, () => {
  const env = createTestEnv("kit_outbox_targets", { db: true, nats: { queues: ["notify"] } });
  beforeAll(env.open);
  afterAll(env.close);

  const parts = () => ({ db: env.db, nats: env.nats, log: env.log });
  const counters = () => env.db.collection<Counter>("counters");
  const sources = () => env.db.collection<{ _id: string }>("sources");
  const message = () => ({ subject: eventSubject(env.nats), msgId: `ev:${randomUUID()}`, data: "{}" });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  async function counter(): Promise<string> {
    const _id = randomUUID();
    await counters().insertOne({ _id, n: 0 });
    return _id;
  }
  const inc = (id: string, change: PendingChange) => counters().updateOne(onceFilter({ _id: id }, change.id), onceUpdate({ $inc: { n: 1 } }, change.id));

  it("clears a target collection through its callback, others directly", async () => {
    const calls: AppliedIds[][] = [];
    const outbox = createOutbox({ ...parts(), graceMs: 10_000, clearTargets: { remote: async (applied) => void calls.push(applied) } });
    const id = await counter();
    const change = outbox.change([message()], { targets: [{ collection: "counters", id }, { collection: "remote", id: "t1/a1" }] });
    await sources().insertOne({ _id: randomUUID(), ...outbox.forInsert(change) });
    await inc(id, change);
    expect((await counters().findOne({ _id: id }))?.applied).toEqual([change.id]);
    const [doc] = await sources().find({ "outbox.id": change.id }).toArray();
    expect(await outbox.settle("sources", doc?._id as string, change)).toBe(true);
    await outbox.flush();
    expect(calls).toEqual([[{ id: "t1/a1", changes: [change.id] }]]);
    expect((await counters().findOne({ _id: id }))?.applied).toEqual([]);
    expect(await sources().findOne({ _id: doc?._id })).not.toHaveProperty("outbox_pending");
  });

  it("a writer's clear that comes after the grace leaves the target's id: a relay may hold the change", async () => {
    const outbox = createOutbox({ ...parts(), graceMs: GRACE });
    const id = await counter();
    const change = outbox.change([message()], { targets: [{ collection: "counters", id }], at: new Date(Date.now() - 2 * GRACE) });
    const _id = randomUUID();
    await sources().insertOne({ _id, ...outbox.forInsert(change) });
    await inc(id, change);
    outbox.discard("sources", _id, change);
    await outbox.flush();
    expect(await sources().findOne({ _id })).not.toHaveProperty("outbox_pending");
    expect((await counters().findOne({ _id: id }))?.applied).toEqual([change.id]);
  });

  it("two relays claim a document one at a time: each stale change is made once", async () => {
    // A finish takes a while (an RPC, say): long enough for another relay's whole pass over a change.
    const finish = async (_doc: unknown, change: PendingChange) => {
      await sleep(Math.random() * 30);
      await inc((change.data as { counter: string }).counter, change);
    };
    const a = createOutbox({ ...parts(), graceMs: GRACE });
    const b = createOutbox({ ...parts(), graceMs: GRACE });
    a.register("sources_raced", finish);
    b.register("sources_raced", finish);
    // One counter per change: a change made twice shows as a 2.
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const id = await counter();
      ids.push(id);
      const change = a.change([message()], { targets: [{ collection: "counters", id }], data: { counter: id }, at: new Date(Date.now() - 2 * GRACE) });
      await env.db.collection("sources_raced").insertOne({ _id: randomUUID() as never, ...a.forInsert(change) });
    }
    await Promise.all([a.relayOnce(), b.relayOnce(), a.relayOnce(), b.relayOnce()]);
    await Promise.all([a.relayOnce(), b.relayOnce()]);
    const after = await counters().find({ _id: { $in: ids } }).toArray();
    expect(after.map((c) => c.n)).toEqual(ids.map(() => 1));
    for (const c of after) expect(c.applied).toEqual([]);
    expect(await env.db.collection("sources_raced").countDocuments({ outbox_pending: true })).toBe(0);
  });

  it('"drop": the document goes, its messages are not published', async () => {
    const outbox = createOutbox({ ...parts(), graceMs: GRACE });
    outbox.register("sources_dropped", async () => "drop");
    const m = message();
    const change = outbox.change([m], { at: new Date(Date.now() - 2 * GRACE) });
    const _id = randomUUID();
    await env.db.collection("sources_dropped").insertOne({ _id: _id as never, ...outbox.forInsert(change) });
    expect(await outbox.relayOnce()).toBe(1);
    expect(await env.db.collection("sources_dropped").findOne({ _id: _id as never })).toBeNull();
    const info = await env.nats.jsm.streams.info(env.nats.stream("notify"));
    const ids: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const got = await env.nats.jsm.streams.getMessage(env.nats.stream("notify"), { seq }).catch(() => null);
      const msgId = got?.header?.get("Nats-Msg-Id");
      if (msgId) ids.push(msgId);
    }
    expect(ids).not.toContain(m.msgId);
  });
});
