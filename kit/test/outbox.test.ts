import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Document } from "mongodb";
import { createOutbox, onceFilter, onceUpdate, type OutboxMessage, type PendingChange } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The one outbox against real storage and JetStream: a change kept in the written document is
// published by its writer or, when the writer died, by the relay; either way once in effect, with
// its once-only increment applied once and the bookkeeping (the change, the target's applied id)
// gone afterwards.

interface Record_ {
  _id: string;
  outbox?: PendingChange[];
  outbox_pending?: true;
  outbox_claim?: Date;
}
interface Target {
  _id: string;
  n: number;
  applied?: string[];
}

describe("outbox", { timeout: 30_000 }, () => {
  const env = createTestEnv("kit_outbox", { db: true, nats: { queues: ["notify"] } });
  beforeAll(env.open);
  afterAll(env.close);

  const records = () => env.db.collection<Record_>("records");
  const targets = () => env.db.collection<Target>("targets");
  const subject = () => env.nats.subject("notify", "outbox_test");

  /** Messages on the test subject so far (the stream keeps them: the notify queue has no consumer here). */
  async function published(): Promise<string[]> {
    const info = await env.nats.jsm.streams.info(env.nats.stream("notify"), { subjects_filter: subject() });
    const bySubject = info.state.subjects;
    return Array.from({ length: bySubject?.[subject()] ?? 0 }, (_, i) => String(i));
  }

  /** Applies the change's increment once (the live writer and the relay share it). */
  const apply = async (change: PendingChange) => {
    await targets().updateOne(onceFilter<Target>({ _id: "t" }, change.id), onceUpdate<Target>({ $inc: { n: 1 } }, change.id));
  };

  function outboxWith(graceMs: number) {
    const outbox = createOutbox({ db: env.db, nats: env.nats, log: env.log, graceMs });
    outbox.register("records", async (_doc: Document, change: PendingChange) => {
      await apply(change);
    });
    return outbox;
  }

  /**
   * env.db whose collection `counted` counts its bulkWrites (the clears), the first one `slowMs`
   * late: a clear under load.
   */
  function countedDb(counted: string, slowMs: number) {
    const calls = { bulkWrites: 0 };
    const db = new Proxy(env.db, {
      get(t, k): unknown {
        if (k !== "collection") return Reflect.get(t, k);
        return (name: string) => {
          const c = t.collection(name);
          if (name !== counted) return c;
          return new Proxy(c, {
            get(ct, ck): unknown {
              if (ck !== "bulkWrite") return Reflect.get(ct, ck);
              return async (...args: Parameters<typeof ct.bulkWrite>) => {
                if (calls.bulkWrites++ === 0) await new Promise((r) => setTimeout(r, slowMs));
                return ct.bulkWrite(...args);
              };
            },
          });
        };
      },
    });
    return { db, calls };
  }

  const message = (id: string): OutboxMessage => ({ subject: subject(), msgId: `outbox-test:${id}`, data: JSON.stringify({ id }) });

  it("a backlog of dead writers' changes is finished by one pass, several documents side by side (at most 8), each once", async () => {
    const outbox = createOutbox({ db: env.db, nats: env.nats, log: env.log, graceMs: 0 });
    let running = 0;
    let most = 0;
    const finished: string[] = [];
    outbox.register("backlog", async (doc: Document) => {
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, 30));
      running--;
      finished.push(String(doc._id));
    });
    const docs = Array.from({ length: 30 }, (_, i) => ({ _id: `b${i}`, ...outbox.forInsert(outbox.change([], { at: new Date(Date.now() - 1000) })) }));
    await env.db.collection<Record_>("backlog").insertMany(docs);
    expect(await outbox.relayOnce()).toBe(30);
    expect(finished.sort()).toEqual(docs.map((d) => d._id).sort());
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(8);
    expect(await env.db.collection<Record_>("backlog").countDocuments({ outbox_pending: true })).toBe(0);
    expect(await outbox.relayOnce()).toBe(0);
  });

  it("a live writer publishes and clears: no change, no flag and no applied id are left", async () => {
    await targets().insertOne({ _id: "t", n: 0 });
    const outbox = outboxWith(60_000);
    await outbox.ensureIndexes();
    const change = outbox.change([message("live")], { targets: [{ collection: "targets", id: "t" }] });
    await records().insertOne({ _id: "live", ...outbox.forInsert(change) });
    await apply(change);
    const before = (await published()).length;
    await outbox.settle("records", "live", change);
    await outbox.flush();
    expect((await published()).length).toBe(before + 1);
    const doc = await records().findOne({ _id: "live" });
    expect(doc).toEqual({ _id: "live" });
    expect(await targets().findOne({ _id: "t" })).toMatchObject({ n: 1, applied: [] });
    // Nothing is left for the relay.
    expect(await outbox.relayOnce()).toBe(0);
    expect((await targets().findOne({ _id: "t" }))?.n).toBe(1);
  });

  it("the relay finishes a change whose writer died before its increment: applied once over two passes", async () => {
    const outbox = outboxWith(0);
    const change = outbox.change([message("died-early")], { targets: [{ collection: "targets", id: "t" }] });
    await records().insertOne({ _id: "died-early", ...outbox.forInsert(change) });
    const n0 = (await targets().findOne({ _id: "t" }))!.n;
    const before = (await published()).length;
    expect(await outbox.relayOnce()).toBe(1);
    expect(await outbox.relayOnce()).toBe(0);
    expect((await targets().findOne({ _id: "t" }))!.n).toBe(n0 + 1);
    expect((await published()).length).toBe(before + 1);
    expect(await records().findOne({ _id: "died-early" })).toEqual({ _id: "died-early" });
  });

  it("the relay does not apply twice a change whose writer died after its increment, before the clear", async () => {
    const outbox = outboxWith(0);
    const change = outbox.change([message("died-late")], { targets: [{ collection: "targets", id: "t" }] });
    await records().insertOne({ _id: "died-late", ...outbox.forInsert(change) });
    await apply(change);
    const n1 = (await targets().findOne({ _id: "t" }))!.n;
    await outbox.relayOnce();
    // Published again by the relay, and JetStream drops the repeat of the message id.
    expect((await targets().findOne({ _id: "t" }))!.n).toBe(n1);
    expect((await targets().findOne({ _id: "t" }))!.applied).toEqual([]);
  });

  it("a change younger than the grace is its writer's: the relay leaves it", async () => {
    const outbox = outboxWith(60_000);
    const change = outbox.change([message("young")]);
    await records().insertOne({ _id: "young", ...outbox.forInsert(change) });
    expect(await outbox.relayOnce()).toBe(0);
    expect((await records().findOne({ _id: "young" }))?.outbox).toHaveLength(1);
  });

  it("two changes of one document: clearing the first keeps the second and its flag", async () => {
    const outbox = outboxWith(60_000);
    const first = outbox.change([message("two-1")]);
    const second = outbox.change([message("two-2")]);
    await records().insertOne({ _id: "two", ...outbox.forInsert(first) });
    await records().updateOne({ _id: "two" }, outbox.forUpdate(second));
    await outbox.settle("records", "two", first);
    await outbox.flush();
    const doc = await records().findOne({ _id: "two" });
    expect(doc?.outbox?.map((c) => c.id)).toEqual([second.id]);
    expect(doc?.outbox_pending).toBe(true);
  });

  it("two changes of one document cleared in one batch: neither change nor the flag is left", async () => {
    const outbox = outboxWith(60_000);
    const first = outbox.change([message("both-1")]);
    const second = outbox.change([message("both-2")]);
    await records().insertOne({ _id: "both", ...outbox.forInsert(first) });
    await records().updateOne({ _id: "both" }, outbox.forUpdate(second));
    await Promise.all([outbox.settle("records", "both", first), outbox.settle("records", "both", second)]);
    await outbox.flush();
    expect(await records().findOne({ _id: "both" })).toEqual({ _id: "both" });
  });

  it("clears settled while a clear runs go together in the next one: 100 changes settled in 5 bursts during a slow clear cost 2 clears", async () => {
    const { db, calls } = countedDb("records", 400);
    const outbox = createOutbox({ db, nats: env.nats, log: env.log, graceMs: 60_000 });
    const changes = Array.from({ length: 101 }, (_, i) => ({ id: `burst-${i}`, change: outbox.change([]) }));
    await records().insertMany(changes.map(({ id, change }) => ({ _id: id, ...outbox.forInsert(change) })));
    const [first, ...rest] = changes;
    await outbox.settle("records", first!.id, first!.change);
    await new Promise((r) => setTimeout(r, 50)); // its clear has begun (and takes 400 ms)
    for (let b = 0; b < 5; b++) {
      await Promise.all(rest.slice(b * 20, b * 20 + 20).map(({ id, change }) => outbox.settle("records", id, change)));
      await new Promise((r) => setTimeout(r, 40));
    }
    await outbox.flush();
    expect(calls.bulkWrites).toBe(2);
    expect(await records().countDocuments({ _id: { $in: changes.map((c) => c.id) }, outbox_pending: true })).toBe(0);
  });

  it("the relay leaves a settled change whose clear is still to come here, however old; once cleared nothing is left", async () => {
    const { db } = countedDb("clearing", 500);
    const clearing = () => env.db.collection<Record_>("clearing");
    const outbox = createOutbox({ db, nats: env.nats, log: env.log, graceMs: 0 });
    let finished = 0;
    outbox.register("clearing", async () => void finished++);
    const change = outbox.change([message("clearing")]);
    await clearing().insertOne({ _id: "clearing", ...outbox.forInsert(change) });
    const before = (await published()).length;
    await outbox.settle("clearing", "clearing", change);
    await new Promise((r) => setTimeout(r, 50)); // the clear runs (500 ms), past the grace
    expect(await outbox.relayOnce()).toBe(0);
    expect(finished).toBe(0);
    expect((await clearing().findOne({ _id: "clearing" }))?.outbox_claim).toBeUndefined();
    await outbox.flush();
    expect((await published()).length).toBe(before + 1);
    expect(await clearing().findOne({ _id: "clearing" })).toEqual({ _id: "clearing" });
  });
});
