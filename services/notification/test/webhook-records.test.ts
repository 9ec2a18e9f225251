import { randomBytes } from "node:crypto";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats, connectRedis, ensureQueue, newEvent, type Nats, type RedisConn } from "@feeds/kit";
import { createDestinationRepository, type DestinationRepository } from "../src/webhooks/destination-repository.js";
import { createRecordRepository, type RecordRepository } from "../src/webhooks/record-repository.js";
import { createWebhookPublisher, type DeliveryTask } from "../src/webhooks/publisher.js";

// The notify worker's webhook handler and the event log's signal, on real MongoDB-wire storage
// (FerretDB here), Redis and NATS JetStream, in a namespace of their own dropped afterwards.

const urls = {
  mongo: process.env.FEEDS_TEST_MONGO_URL ?? "mongodb://127.0.0.1:27017/",
  redis: process.env.FEEDS_TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
  nats: process.env.FEEDS_TEST_NATS_URL ?? "nats://127.0.0.1:4222",
};
const namespace = `webhook_records_${randomBytes(4).toString("hex")}`;

describe("webhook records", () => {
  const mongo = new MongoClient(urls.mongo, { serverSelectionTimeoutMS: 5_000 });
  let db: Db;
  let redis: RedisConn;
  let nats: Nats;
  let destinations: DestinationRepository;
  let records: RecordRepository;

  beforeAll(async () => {
    await mongo.connect();
    db = mongo.db(namespace);
    redis = await connectRedis({ REDIS_URL: urls.redis, FEEDS_NAMESPACE: namespace });
    nats = await connectNats({ NATS_URL: urls.nats, FEEDS_NAMESPACE: namespace }, "webhook-records-test");
    await ensureQueue(nats, "webhooks");
    destinations = createDestinationRepository(db, redis);
    records = createRecordRepository(db, redis);
    await Promise.all([destinations.ensureIndexes(), records.ensureIndexes()]);
  });

  afterAll(async () => {
    await db?.dropDatabase();
    await mongo.close();
    if (redis) {
      const keys = await redis.redis.keys(`${namespace}:*`);
      if (keys.length) await redis.redis.del(...keys);
      await redis.close();
    }
    if (nats) {
      for await (const s of nats.jsm.streams.list()) {
        if (s.config.name.startsWith(`${namespace}_`)) await nats.jsm.streams.delete(s.config.name);
      }
      await nats.close();
    }
  });

  const destination = (tenantId: string, events: string[] = []) => ({
    _id: crypto.randomUUID(),
    tenant_id: tenantId,
    url: "https://hooks.example/x",
    events,
    secret: "whsec_AAAA",
    created_at: new Date(),
  });

  async function queued(): Promise<DeliveryTask[]> {
    const info = await nats.jsm.streams.info(nats.stream("webhooks"));
    const out: DeliveryTask[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages; seq++) {
      const m = await nats.jsm.streams.getMessage(nats.stream("webhooks"), { seq }).catch(() => null);
      if (m) out.push(JSON.parse(new TextDecoder().decode(m.data)) as DeliveryTask);
    }
    return out;
  }

  it("a redelivered event creates its records once and re-queues only the undelivered ones; the signal counts each record once", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    const a = destination(tenant);
    const b = destination(tenant);
    const filtered = destination(tenant, ["user.updated"]);
    for (const d of [a, b, filtered]) await destinations.create(d);
    const publish = createWebhookPublisher({ nats, destinations, records });
    const event = newEvent("activity.added", tenant, { id: "x" }, { meta: { secret: "routing" } });

    await publish(event);
    const first = await records.page(tenant, 100, null);
    expect(first.map((r) => r.destination_id).sort()).toEqual([a._id, b._id].sort());
    expect(first.every((r) => r.status === "pending" && r.attempts === 0 && r.event_id === event.id)).toBe(true);
    const tasks = (await queued()).filter((t) => t.t === tenant);
    expect(tasks.map((t) => t.d).sort()).toEqual([a._id, b._id].sort());
    // The body is the public event: meta never leaves.
    expect(tasks[0]?.e).toEqual({ id: event.id, type: event.type, created_at: event.created_at, tenant_id: tenant, data: { id: "x" } });
    expect(await records.signal(tenant)).toMatchObject({ count: 2 });

    // a was delivered; the event comes again (a redelivery after a crash): nothing new for a.
    const recA = first.find((r) => r.destination_id === a._id);
    const v0 = (await records.signal(tenant)).version;
    await records.published(tenant, recA?._id ?? "");
    const before = (await records.signal(tenant)).version;
    // A status change moves the version; a redelivery that changes nothing does not.
    expect(before).toBeGreaterThan(v0);
    await publish(event);
    expect(await records.page(tenant, 100, null)).toHaveLength(2);
    expect(await records.signal(tenant)).toMatchObject({ count: 2 });
    expect((await queued()).filter((t) => t.t === tenant)).toHaveLength(2);
    // Re-queued for b only (its message id makes JetStream drop it within the window).
    const pending = await records.create(tenant, first.map((r) => ({ ...r, created_at: new Date() })));
    expect(pending.map((r) => r.destination_id)).toEqual([b._id]);
    expect((await records.signal(tenant)).version).toBe(before);
  });

  it("the signal is answered from Redis and rebuilt from MongoDB once when Redis lost it", async () => {
    const tenant = `t-${randomBytes(3).toString("hex")}`;
    await destinations.create(destination(tenant));
    const publish = createWebhookPublisher({ nats, destinations, records });
    await publish(newEvent("webhook.test", tenant, {}));
    await publish(newEvent("webhook.test", tenant, {}));
    const s = await records.signal(tenant);
    expect(s.count).toBe(2);
    await redis.redis.del(redis.key("whsignal", tenant));
    const rebuilt = await records.signal(tenant);
    expect(rebuilt.count).toBe(2);
    expect(rebuilt.version).toBeGreaterThanOrEqual(s.version);
    await publish(newEvent("webhook.test", tenant, {}));
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
});
