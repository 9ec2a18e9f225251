import { randomBytes, randomUUID } from "node:crypto";
import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, isDuplicateKey, newEvent, type Outbox, type PendingChange } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import {
  createDestinationRepository,
  DESTINATION_COUNTS,
  DESTINATIONS,
  MAX_DESTINATIONS,
  type DestinationRepository,
} from "../src/webhooks/destination-repository.js";
import { createRecordRepository, type RecordKey, type RecordRepository } from "../src/webhooks/record-repository.js";
import { createSecretBox } from "../src/webhooks/secret-box.js";
import { createWebhookPublisher, DELIVERY_SUBJECT, recordIdOf, type DeliveryTask } from "../src/webhooks/publisher.js";

// The notify worker's webhook handler, the delivery worker's record writes and the event log's
// signal, and the destinations' cap, on real MongoDB-wire storage, Redis and NATS JetStream, in a
// namespace of their own dropped afterwards.

describe("webhook records", () => {
  const commands: CommandStartedEvent[] = [];
  const env = createTestEnv("webhook_records", { db: { onCommand: (c) => commands.push(c) }, redis: true, nats: { queues: ["webhooks"] } });
  let destinations: DestinationRepository;
  let records: RecordRepository;
  let outbox: Outbox;

  beforeAll(async () => {
    await env.open();
    outbox = createOutbox({ db: env.db, nats: env.nats, log: env.log });
    destinations = createDestinationRepository(env.db, env.redis, createSecretBox(randomBytes(32)), outbox);
    records = createRecordRepository(env.db, env.redis);
    await Promise.all([destinations.ensureIndexes(), records.ensureIndexes(), outbox.ensureIndexes()]);
  });

  afterAll(env.close);

  const destination = (tenantId: string, events: string[] = []) => ({
    _id: crypto.randomUUID(),
    tenant_id: tenantId,
    url: "https://hooks.example/x",
    events,
    secret: "whsec_AAAA",
    created_at: new Date(),
  });

  /** Every task published from now on (a core subscription sees those JetStream drops as duplicates too). */
  function watchTasks() {
    const sub = env.nats.nc.subscribe(env.nats.subject("webhooks", DELIVERY_SUBJECT));
    const seen: DeliveryTask[] = [];
    void (async () => {
      for await (const m of sub) seen.push(JSON.parse(new TextDecoder().decode(m.data)) as DeliveryTask);
    })();
    return {
      seen,
      async stop() {
        await env.nats.nc.flush();
        sub.unsubscribe();
      },
    };
  }

  const keyOf = (tenant: string, destinationId: string, type = "webhook.test"): RecordKey => ({
    _id: randomUUID(),
    tenant_id: tenant,
    event_id: randomUUID(),
    event_type: type,
    destination_id: destinationId,
    created_at: new Date(),
  });

  it("an event becomes one task per destination that wants it, carrying the public body; a redelivered event re-queues only what is neither published nor given up", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    const a = destination(tenant);
    const b = destination(tenant);
    const failed = destination(tenant);
    const filtered = destination(tenant, ["user.updated"]);
    for (const d of [a, b, failed, filtered]) await destinations.create(d);
    const publish = createWebhookPublisher({ nats: env.nats, destinations, records });
    const event = newEvent("activity.added", tenant, { id: "x" }, { meta: { secret: "routing" } });

    const first = watchTasks();
    await publish(event, { redelivered: false });
    await first.stop();
    expect(first.seen.map((t) => t.d).sort()).toEqual([a._id, b._id, failed._id].sort());
    expect(first.seen.every((t) => t.r === recordIdOf(event.id, t.d) && t.t === tenant)).toBe(true);
    // The body is the public event: meta never leaves.
    expect(first.seen[0]?.e).toEqual({ id: event.id, type: event.type, created_at: event.created_at, tenant_id: tenant, data: { id: "x" } });
    // Records are the delivery worker's: routing wrote none.
    expect(await records.page(tenant, 100, null)).toEqual([]);

    // a was published and failed was given up; the event comes again (a redelivery after a crash).
    const key = (d: { _id: string }): RecordKey => ({ ...keyOf(tenant, d._id, event.type), _id: recordIdOf(event.id, d._id), event_id: event.id });
    await records.write({ record: key(a), attempted: true, status: "published", fresh: true });
    await records.write({ record: key(failed), attempted: true, status: "failed", fresh: true });
    const again = watchTasks();
    await publish(event, { redelivered: true });
    await again.stop();
    expect(again.seen.map((t) => t.d)).toEqual([b._id]);
  });

  it("a burst of record writes is stored in one insert, each record once; a twin's first write and a write for a missing record fall back; the signal counts each record once", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    const inserts = () => commands.filter((c) => c.commandName === "insert" && c.command.insert === "webhook_events").length;
    const before = inserts();
    const keys = Array.from({ length: 50 }, () => keyOf(tenant, "d1"));
    const attempts = await Promise.all(keys.map((record) => records.write({ record, attempted: true, status: "published", fresh: true })));
    expect(attempts).toEqual(keys.map(() => 1));
    expect(inserts() - before).toBe(1);
    const stored = await records.page(tenant, 100, null);
    expect(stored).toHaveLength(50);
    expect(stored.every((r) => r.status === "published" && r.attempts === 1)).toBe(true);
    expect(await records.signal(tenant)).toMatchObject({ count: 50 });
    const v0 = (await records.signal(tenant)).version;

    // A twin task's first write finds the record: it counts its attempt there, no second record.
    const twin = keys[0] as RecordKey;
    expect(await records.write({ record: twin, attempted: true, status: "pending", fresh: true })).toBe(2);
    // Given up later: a published record stays published.
    expect(await records.write({ record: twin, attempted: false, status: "failed", fresh: false })).toBe(2);
    // A later write whose record was never stored (its process died first) stores it.
    const lost = keyOf(tenant, "d2");
    expect(await records.write({ record: lost, attempted: true, status: "pending", fresh: false })).toBe(1);
    expect(await records.write({ record: lost, attempted: true, status: "failed", fresh: false })).toBe(2);

    const all = await records.page(tenant, 100, null);
    expect(all).toHaveLength(51);
    expect(all.find((r) => r._id === twin._id)).toMatchObject({ status: "published", attempts: 2 });
    expect(all.find((r) => r._id === lost._id)).toMatchObject({ status: "failed", attempts: 2, event_id: lost.event_id, event_type: "webhook.test" });
    const s = await records.signal(tenant);
    expect(s.count).toBe(51);
    // Every change moves the version.
    expect(s.version).toBeGreaterThan(v0);
  });

  it("the signal is answered from Redis and rebuilt from MongoDB once when Redis lost it", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    const write = () => records.write({ record: keyOf(tenant, "d1"), attempted: true, status: "published", fresh: true });
    await write();
    await write();
    const s = await records.signal(tenant);
    expect(s.count).toBe(2);
    await env.redis.redis.del(env.redis.tenantKey(tenant, "cs", "webhook_events"));
    const rebuilt = await records.signal(tenant);
    expect(rebuilt.count).toBe(2);
    expect(rebuilt.version).toBeGreaterThanOrEqual(s.version);
    await write();
    const after = await records.signal(tenant);
    expect(after.count).toBe(3);
    expect(after.version).toBeGreaterThan(rebuilt.version);
  });

  it("a tenant has at most 20 destinations, also when registrations race", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    const results = await Promise.allSettled(Array.from({ length: 24 }, () => destinations.create(destination(tenant))));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(20);
    const refused = results.flatMap((r) => (r.status === "rejected" ? [(r.reason as { code?: unknown }).code] : []));
    expect(refused).toEqual(["CONFLICT", "CONFLICT", "CONFLICT", "CONFLICT"]);
    expect(await destinations.count(tenant)).toBe(20);
  });

  const counts = () => env.db.collection<{ _id: string; count: number; outbox?: PendingChange[]; outbox_pending?: true; applied?: string[] }>(DESTINATION_COUNTS);
  /** The tenant's counter: its count, changes pending and marks (a cleared change leaves none). */
  const counter = async (tenant: string) => {
    const doc = await counts().findOne({ _id: tenant });
    return doc && { count: doc.count, outbox: doc.outbox ?? [], applied: doc.applied ?? [] };
  };
  /**
   * What a writer that died long ago (past the relay's grace) left of a change of the count: the
   * count moved by `delta`, the change pending on the counter with its mark.
   */
  async function deadWriter(tenant: string, op: "add" | "remove", destinationId: string) {
    const change = outbox.change([], {
      targets: [{ collection: DESTINATION_COUNTS, id: tenant }],
      data: { op, destination: destinationId },
      at: new Date(Date.now() - 60_000),
    });
    await counts().updateOne({ _id: tenant }, { $inc: { count: op === "add" ? 1 : -1 }, $push: { outbox: change, applied: change.id }, $set: { outbox_pending: true } });
    return change;
  }
  /** The relays of two processes at once, then a second pass (it finds nothing left), then the clears. */
  const relay = async () => {
    const other = createOutbox({ db: env.db, nats: env.nats, log: env.log });
    createDestinationRepository(env.db, env.redis, createSecretBox(randomBytes(32)), other);
    await Promise.all([outbox.relayOnce(), other.relayOnce()]);
    await outbox.relayOnce();
    await Promise.all([outbox.flush(), other.flush()]);
  };

  it(`a tenant at ${MAX_DESTINATIONS - 4} destinations with 20 registrations racing: exactly 4 succeed, the rest are CONFLICT`, async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    for (let i = 0; i < MAX_DESTINATIONS - 4; i++) await destinations.create(destination(tenant));
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => destinations.create(destination(tenant))));
    const won = results.filter((r) => r.status === "fulfilled").length;
    console.log(`webhook cap: ${won} of 20 racing registrations succeeded at ${MAX_DESTINATIONS - 4} existing (4 expected), ${await destinations.count(tenant)} stored`);
    expect(won).toBe(4);
    expect(results.flatMap((r) => (r.status === "rejected" ? [(r.reason as { code?: unknown }).code] : []))).toEqual(Array(16).fill("CONFLICT"));
    expect(await destinations.count(tenant)).toBe(MAX_DESTINATIONS);
    await outbox.flush();
    expect(await counter(tenant)).toMatchObject({ count: MAX_DESTINATIONS, outbox: [], applied: [] });
  });

  it("removals give their slots back, once each, also when they race", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    const made = Array.from({ length: MAX_DESTINATIONS }, () => destination(tenant));
    for (const d of made) await destinations.create(d);
    const [first, second] = made;
    const removed = await Promise.all(Array.from({ length: 6 }, () => destinations.remove(tenant, first!._id)));
    expect(removed.filter(Boolean)).toHaveLength(1);
    expect(await destinations.get(tenant, first!._id)).toBeNull();
    expect((await destinations.routes(tenant)).map((r) => r.id)).not.toContain(first!._id);
    expect((await counter(tenant))?.count).toBe(MAX_DESTINATIONS - 1);
    await destinations.create(destination(tenant));
    await expect(destinations.create(destination(tenant))).rejects.toMatchObject({ code: "CONFLICT" });
    expect(await destinations.remove(tenant, second!._id)).toBe(true);
    expect(await destinations.remove(`${tenant}-other`, made[2]!._id)).toBe(false);
    expect(await destinations.remove(tenant, randomUUID())).toBe(false);
    await outbox.flush();
    expect(await counter(tenant)).toMatchObject({ count: MAX_DESTINATIONS - 1, outbox: [], applied: [] });
    expect(await destinations.count(tenant)).toBe(MAX_DESTINATIONS - 1);
  });

  it("a registration whose writer died after taking its slot gets it back once, and its insert can never land; one that inserted keeps it", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    await destinations.create(destination(tenant));
    const d = destination(tenant);
    await deadWriter(tenant, "add", d._id);
    expect((await counter(tenant))?.count).toBe(2);
    await relay();
    expect(await counter(tenant)).toMatchObject({ count: 1, outbox: [], applied: [] });
    // A writer that was only stalled: its insert fails, and it answers no registration.
    const late = await env.db
      .collection(DESTINATIONS)
      .insertOne({ ...d, sealed_secret: "x" } as never)
      .then(() => "inserted", (e: unknown) => (isDuplicateKey(e) ? "duplicate" : String(e)));
    expect(late).toBe("duplicate");
    expect(await destinations.count(tenant)).toBe(1);

    const kept = destination(tenant);
    await deadWriter(tenant, "add", kept._id);
    await env.db.collection(DESTINATIONS).insertOne({ ...kept, sealed_secret: "x" } as never);
    await relay();
    expect(await counter(tenant)).toMatchObject({ count: 2, outbox: [], applied: [] });
    expect(await destinations.count(tenant)).toBe(2);
  });

  it("a removal whose writer died after giving its slot back: completed if the destination is still there, else the slot is taken again", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    const [a, b] = [destination(tenant), destination(tenant)];
    await destinations.create(a);
    await destinations.create(b);
    // Died before the tombstone: the relay removes the destination.
    await deadWriter(tenant, "remove", a._id);
    await relay();
    expect(await counter(tenant)).toMatchObject({ count: 1, outbox: [], applied: [] });
    expect((await destinations.routes(tenant)).map((r) => r.id)).toEqual([b._id]);
    // Raced a removal that won (or named nothing): the slot is taken again, once.
    await deadWriter(tenant, "remove", a._id);
    await deadWriter(tenant, "remove", randomUUID());
    await relay();
    expect(await counter(tenant)).toMatchObject({ count: 1, outbox: [], applied: [] });
    expect(await destinations.count(tenant)).toBe(1);
  });
});
