import { randomBytes, randomUUID } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, createLogger, fromRpcError, scope, type Caller, createInternalAuth, createLocalTransport, type RedisConn, rootKeys } from "@feeds/kit";
import { PromotedService, type PromotedRecord } from "@feeds/proto/feeds/feed/v1/feed";
import { createPromotedRepository, SERVE_LIMIT } from "../src/promoted-repository.js";
import { createPromotedService } from "../src/promoted-routes.js";
import { createServedCounter, snapshotIdOf } from "../src/promoted-served.js";

// Integration rung: the PromotedService on real MongoDB-wire storage, in a
// throwaway database dropped afterwards, served over Connect's in-memory router transport with the
// real plumbing. Skipped when no storage answers at FEEDS_TEST_MONGO_URL (default the local one).

const url = process.env.FEEDS_TEST_MONGO_URL ?? "mongodb://127.0.0.1:27017/";
const redisUrl = process.env.FEEDS_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const mongo = new MongoClient(url, { serverSelectionTimeoutMS: 3_000 });
// A second client with command monitoring: it counts what one service asks the database.
const monitored = new MongoClient(url, { serverSelectionTimeoutMS: 3_000, monitorCommands: true });
const commands: string[] = [];
monitored.on("commandStarted", (e) => commands.push(e.commandName));
const reachable = await mongo.connect().then(
  () => true,
  (e: unknown) => {
    console.warn(`promoted storage tests skipped: no MongoDB at ${url} (${String(e)})`);
    return false;
  },
);

const log = createLogger({ LOG_LEVEL: "silent" }, "test");
let db: Db;
let redis: RedisConn;

function start(opts: { foldDelayMs?: number; sweepMs?: number; db?: Db; redis?: RedisConn } = {}) {
  const repo = createPromotedRepository(opts.db ?? db);
  const svc = createPromotedService({ repo, redis: opts.redis ?? redis, log, foldDelayMs: opts.foldDelayMs ?? 20, sweepMs: opts.sweepMs ?? 200 });
  const transport = createLocalTransport((router) => router.service(PromotedService, svc.impl), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
  return { client: createClient(PromotedService, transport), svc, repo };
}

const server = (tenantId: string) => scope({ tenantId, caller: { kind: "server" } });
const as = (tenantId: string, caller: Caller) => scope({ tenantId, caller });
const newTenant = () => `t-${randomBytes(4).toString("hex")}`;

async function codeOf(p: Promise<unknown>) {
  try {
    await p;
    return "OK";
  } catch (e) {
    return fromRpcError(e).code;
  }
}

async function listAll(c: Client<typeof PromotedService>, tenantId: string): Promise<PromotedRecord[]> {
  const out: PromotedRecord[] = [];
  let cursor = "";
  do {
    const res = await c.listPromoted({ page: { limit: 100, cursor } }, server(tenantId));
    out.push(...res.records);
    cursor = res.next;
  } while (cursor);
  return out;
}

const make = (c: Client<typeof PromotedService>, tenantId: string, object: string, audience?: { users?: string[]; feeds?: string[] }) =>
  c
    .createPromoted(
      {
        actor: "brand:acme",
        verb: "promote",
        object,
        customJson: JSON.stringify({ object }),
        audience: audience ? { users: audience.users ?? [], feeds: audience.feeds ?? [] } : undefined,
      },
      server(tenantId),
    )
    .then((r) => r.record!);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!reachable)("promoted activities on real storage", () => {
  let sys: ReturnType<typeof start>;

  beforeAll(async () => {
    db = mongo.db(`feeds_promoted_test_${randomBytes(5).toString("hex")}`);
    redis = await connectRedis({ REDIS_URL: redisUrl, FEEDS_NAMESPACE: db.databaseName });
    sys = start();
    await sys.repo.ensureIndexes();
  });

  afterAll(async () => {
    await sys?.svc.close();
    await db?.dropDatabase();
    await mongo.close();
    await monitored.close();
    if (redis) {
      const keys = await redis.redis.keys(`${db.databaseName}:*`);
      if (keys.length) await redis.redis.del(...keys);
      await redis.close();
    }
  });

  it("creates, lists newest first with keyset pages, and keeps retracted records in the listing", async () => {
    const { client: c } = sys;
    const t = newTenant();
    const made: PromotedRecord[] = [];
    for (let i = 0; i < 5; i++) made.push(await make(c, t, `product:${i}`));
    const first = made[0]!;
    expect(first.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(first).toMatchObject({ actor: "brand:acme", verb: "promote", object: "product:0", servedCount: 0n });
    expect(first.audience).toBeUndefined();
    expect(first.retractedAt).toBeUndefined();

    const p1 = await c.listPromoted({ page: { limit: 2 } }, server(t));
    expect(p1.records.map((r) => r.object)).toEqual(["product:4", "product:3"]);
    expect(p1.next).not.toBe("");
    const p2 = await c.listPromoted({ page: { limit: 2, cursor: p1.next } }, server(t));
    const p3 = await c.listPromoted({ page: { limit: 2, cursor: p2.next } }, server(t));
    expect([...p2.records, ...p3.records].map((r) => r.object)).toEqual(["product:2", "product:1", "product:0"]);
    expect(p3.next).toBe("");

    await c.retractPromoted({ id: made[3]!.id }, server(t));
    const all = await listAll(c, t);
    expect(all).toHaveLength(5);
    expect(all.find((r) => r.id === made[3]!.id)?.retractedAt).toBeDefined();
    expect(all.filter((r) => r.retractedAt).length).toBe(1);

    expect(await codeOf(c.listPromoted({ page: { limit: 2, cursor: "not a cursor" } }, server(t)))).toBe("VALIDATION_FAILED");
    expect(await codeOf(c.listPromoted({ page: { limit: 101 } }, server(t)))).toBe("VALIDATION_FAILED");
  });

  it("stores the audience (duplicates dropped) and refuses a bad body with fields", async () => {
    const { client: c } = sys;
    const t = newTenant();
    const r = await make(c, t, "product:a", { users: ["bob", "bob"], feeds: ["user:news"] });
    expect(r.audience).toMatchObject({ users: ["bob"], feeds: ["user:news"] });
    expect((await listAll(c, t))[0]?.audience).toMatchObject({ users: ["bob"], feeds: ["user:news"] });
    try {
      await c.createPromoted({ actor: "", verb: "v", object: "o", customJson: "", audience: { users: [], feeds: ["bad"] } }, server(t));
      expect.unreachable();
    } catch (e) {
      const err = fromRpcError(e);
      expect(err.code).toBe("VALIDATION_FAILED");
      expect(err.fields.map((f) => f.path)).toEqual(["actor", "audience.feeds.0"]);
    }
  });

  it("retracts once: a second retract, even a concurrent one, is NOT_FOUND", async () => {
    const { client: c } = sys;
    const t = newTenant();
    const a = await make(c, t, "product:a");
    expect(await codeOf(c.retractPromoted({ id: a.id }, server(t)))).toBe("OK");
    expect(await codeOf(c.retractPromoted({ id: a.id }, server(t)))).toBe("NOT_FOUND");
    const b = await make(c, t, "product:b");
    const codes = await Promise.all(Array.from({ length: 6 }, () => codeOf(c.retractPromoted({ id: b.id }, server(t)))));
    expect(codes.filter((x) => x === "OK")).toHaveLength(1);
    expect(codes.filter((x) => x === "NOT_FOUND")).toHaveLength(5);
    expect(await codeOf(c.retractPromoted({ id: randomUUID() }, server(t)))).toBe("NOT_FOUND");
    expect(await codeOf(c.retractPromoted({ id: "not-a-uuid" }, server(t)))).toBe("NOT_FOUND");
    // Upper-case spelling names the same record.
    const d = await make(c, t, "product:d");
    expect(await codeOf(c.retractPromoted({ id: d.id.toUpperCase() }, server(t)))).toBe("OK");
  });

  it("keeps management for the server: user tokens get FORBIDDEN, serving is open", async () => {
    const { client: c } = sys;
    const t = newTenant();
    const a = await make(c, t, "product:a");
    const user = as(t, { kind: "user", userId: "alice" });
    expect(await codeOf(c.createPromoted({ actor: "a", verb: "v", object: "o" }, user))).toBe("FORBIDDEN");
    expect(await codeOf(c.listPromoted({}, user))).toBe("FORBIDDEN");
    expect(await codeOf(c.retractPromoted({ id: a.id }, user))).toBe("FORBIDDEN");
    expect((await c.servePromoted({ feed: { group: "user", id: "alice" } }, user)).records.map((r) => r.id)).toEqual([a.id]);
    expect(await codeOf(c.listPromoted({}, scope({ caller: { kind: "server" } })))).toBe("UNAUTHENTICATED");
    expect(await codeOf(c.servePromoted({ feed: { group: "bad group", id: "x" } }, server(t)))).toBe("VALIDATION_FAILED");
  });

  it("serves the live records a read is eligible for, newest first", async () => {
    const { client: c } = sys;
    const t = newTenant();
    const everyone = await make(c, t, "product:everyone");
    const aliceFeed = await make(c, t, "product:alice-feed", { feeds: ["timeline:alice"] });
    const bob = await make(c, t, "product:bob", { users: ["bob"] });
    const gone = await make(c, t, "product:gone");
    await c.retractPromoted({ id: gone.id }, server(t));
    const ids = async (feed: string, caller: Caller, userId = "") => {
      const [group, id] = feed.split(":") as [string, string];
      return (await c.servePromoted({ feed: { group, id }, userId }, as(t, caller))).records.map((r) => r.object);
    };
    const srv: Caller = { kind: "server" };
    expect(await ids("timeline:alice", srv)).toEqual(["product:alice-feed", "product:everyone"]);
    expect(await ids("user:alice", srv)).toEqual(["product:everyone"]);
    expect(await ids("user:alice", { kind: "user", userId: "bob" })).toEqual(["product:bob", "product:everyone"]);
    expect(await ids("timeline:alice", { kind: "user", userId: "bob" })).toEqual(["product:bob", "product:alice-feed", "product:everyone"]);
    // A user token reads as itself, whatever user the request names.
    expect(await ids("user:x", { kind: "user", userId: "carol" }, "bob")).toEqual(["product:everyone"]);
    // The gateway names the user for a system caller.
    expect(await ids("user:x", { kind: "system" }, "bob")).toEqual(["product:bob", "product:everyone"]);
    // Sidecar entries carry what the sidecar shows.
    const [first] = (await c.servePromoted({ feed: { group: "timeline", id: "alice" } }, server(t))).records;
    expect(first).toMatchObject({ id: aliceFeed.id, actor: "brand:acme", verb: "promote", customJson: '{"object":"product:alice-feed"}' });
    expect(everyone.id).not.toBe(bob.id);
  });

  it("counts every delivery exactly once, under concurrency and across processes", async () => {
    const one = sys;
    const two = start(); // a second feed process on the same storage
    try {
      const t = newTenant();
      const everyone = await make(one.client, t, "product:everyone");
      const bobOnly = await make(one.client, t, "product:bob", { users: ["bob"] });
      const reads = Array.from({ length: 40 }, (_, i) => {
        const c = i % 2 ? one.client : two.client;
        const caller: Caller = i % 4 === 0 ? { kind: "user", userId: "bob" } : { kind: "server" };
        return c.servePromoted({ feed: { group: "user", id: `u${i}` } }, as(t, caller));
      });
      const served = await Promise.all(reads);
      const bobReads = served.filter((r) => r.records.length === 2).length;
      expect(bobReads).toBe(10);
      await Promise.all([one.svc.settle(), two.svc.settle()]);
      const counts = new Map((await listAll(one.client, t)).map((r) => [r.id, r.servedCount]));
      expect(counts.get(everyone.id)).toBe(40n);
      expect(counts.get(bobOnly.id)).toBe(10n);
    } finally {
      await two.svc.close();
    }
  });

  it("keeps the final served_count of a retracted record and serves it no more", async () => {
    const { client: c } = sys;
    const t = newTenant();
    const a = await make(c, t, "product:a");
    for (let i = 0; i < 3; i++) await c.servePromoted({ feed: { group: "user", id: "x" } }, server(t));
    await c.retractPromoted({ id: a.id }, server(t));
    expect((await c.servePromoted({ feed: { group: "user", id: "x" } }, server(t))).records).toEqual([]);
    const [listed] = await listAll(c, t);
    expect(listed).toMatchObject({ id: a.id, servedCount: 3n });
    expect(listed?.retractedAt).toBeDefined();
  });

  it("folds served_count in the background soon after deliveries, without a listing", async () => {
    const t = newTenant();
    const a = await make(sys.client, t, "product:a");
    await Promise.all(Array.from({ length: 5 }, () => sys.client.servePromoted({ feed: { group: "user", id: "x" } }, server(t))));
    let count = 0;
    for (let i = 0; i < 100 && count < 5; i++) {
      await sleep(20);
      count = (await sys.repo.servedCounts(t, [a.id])).get(a.id) ?? 0;
    }
    expect(count).toBe(5);
  });

  it("a fold that died after applying half a snapshot is finished by folders racing, each delivery counted once; the records forget the snapshot later", async () => {
    const t = newTenant();
    // A process that counts but never folds by itself, in a Redis namespace of its own (the
    // other processes' sweeps would fold its deliveries).
    const own = await connectRedis({ REDIS_URL: redisUrl, FEEDS_NAMESPACE: `${db.databaseName}_dead` });
    const reader = start({ foldDelayMs: 3_600_000, sweepMs: 3_600_000, redis: own });
    const served = createServedCounter(own);
    try {
      const made: PromotedRecord[] = [];
      for (let i = 0; i < 6; i++) made.push(await make(reader.client, t, `product:${i}`));
      const serve = () => reader.client.servePromoted({ feed: { group: "user", id: "x" } }, server(t));
      for (let i = 0; i < 5; i++) await serve();
      // The dead folder: took a snapshot of the 5 deliveries, applied the increments of half the
      // records, and died before the others and before dropping the snapshot.
      const [snapshot] = await served.snapshots(t);
      const incs = await served.read(snapshot!);
      expect([...incs.values()]).toEqual([5, 5, 5, 5, 5, 5]);
      await reader.repo.applySnapshot(t, snapshotIdOf(snapshot!), new Map([...incs].slice(0, 3)));
      // Deliveries after it, then three folders at once (two processes) finish everything.
      for (let i = 0; i < 2; i++) await serve();
      await Promise.all([reader.repo.fold(t, served), reader.repo.fold(t, served), sys.repo.fold(t, served)]);
      const counts = await sys.repo.servedCounts(t, made.map((m) => m.id));
      console.log(`promoted fold after a half-applied snapshot: served counts ${[...counts.values()].join(", ")} (7 each expected)`);
      expect([...counts.values()]).toEqual([7, 7, 7, 7, 7, 7]);
      expect(await redis.redis.exists(snapshot!)).toBe(0);
      // The records remember the snapshots until a fold after FORGET_AFTER_MS forgets them.
      const remembered = await db.collection("promoted").countDocuments({ tenant_id: t, "applied.0": { $exists: true } });
      expect(remembered).toBe(6);
      expect(await served.pendingTenants()).toContain(t);
      await createPromotedRepository(db, { forgetAfterMs: 0 }).fold(t, served);
      expect(await db.collection("promoted").countDocuments({ tenant_id: t, "applied.0": { $exists: true } })).toBe(0);
      expect(await served.pendingTenants()).not.toContain(t);
      expect((await listAll(reader.client, t)).map((r) => r.servedCount)).toEqual([7n, 7n, 7n, 7n, 7n, 7n]);
    } finally {
      await reader.svc.close();
      const keys = await own.redis.keys(`${db.databaseName}_dead:*`);
      if (keys.length) await own.redis.del(...keys);
      await own.close();
    }
  });

  it("serves a warm read without one database command, and create and retract show on the next read", async () => {
    const { client: c } = sys;
    // The reader folds nothing itself in this test (its folds and sweeps are an hour away): what
    // it asks the database is the serve path alone. `sys` folds the deliveries in the background.
    await monitored.connect();
    const reader = start({ db: monitored.db(db.databaseName), foldDelayMs: 3_600_000, sweepMs: 3_600_000 });
    const t = newTenant();
    const a = await make(c, t, "product:a");
    const read = () => reader.client.servePromoted({ feed: { group: "user", id: "x" } }, server(t)).then((r) => r.records.map((p) => p.id));
    expect(await read()).toEqual([a.id]); // fills the cache
    commands.length = 0;
    for (let i = 0; i < 10; i++) expect(await read()).toEqual([a.id]);
    expect(commands).toEqual([]);
    await reader.svc.close();
    const b = await make(c, t, "product:b");
    expect(await read()).toEqual([b.id, a.id]);
    await c.retractPromoted({ id: a.id }, server(t));
    expect(await read()).toEqual([b.id]);
    await sys.svc.settle();
    const counts = new Map((await listAll(c, t)).map((r) => [r.id, r.servedCount]));
    expect(counts.get(a.id)).toBe(12n);
    expect(counts.get(b.id)).toBe(2n);
  });

  it("folds a snapshot whose folder died after applying it exactly once, and deliveries of a dead process by the sweep", async () => {
    const t = newTenant();
    // A process that counts but never folds (its fold timer is far off) and then goes away.
    const gone = start({ foldDelayMs: 3_600_000 });
    const a = await make(gone.client, t, "product:a");
    for (let i = 0; i < 4; i++) await gone.client.servePromoted({ feed: { group: "user", id: "x" } }, server(t));
    await gone.svc.close();
    // The sweep of the living process finds the tenant and folds its 4 deliveries.
    let count = 0;
    for (let i = 0; i < 100 && count < 4; i++) {
      await sleep(50);
      count = (await sys.repo.servedCounts(t, [a.id])).get(a.id) ?? 0;
    }
    expect(count).toBe(4);
    // A folder that applied a snapshot's counts and died before dropping it: the records name
    // the snapshot, so the next fold drops it without counting it again.
    const snapshot = redis.tenantKey(t, "promo", "snap", "dead");
    await redis.redis.multi().hset(snapshot, a.id, "3").sadd(redis.tenantKey(t, "promo", "snaps"), snapshot).exec();
    await sys.repo.applySnapshot(t, snapshotIdOf(snapshot), new Map([[a.id, 3]]));
    const [listed] = await listAll(sys.client, t);
    expect(listed?.servedCount).toBe(7n);
    expect(await redis.redis.exists(snapshot)).toBe(0);
  });

  it("bounds a read to the newest live records", async () => {
    const { client: c } = sys;
    const t = newTenant();
    const made: PromotedRecord[] = [];
    for (let i = 0; i < SERVE_LIMIT + 3; i++) made.push(await make(c, t, `product:${i}`));
    const served = (await c.servePromoted({ feed: { group: "user", id: "x" } }, server(t))).records;
    expect(served).toHaveLength(SERVE_LIMIT);
    expect(served[0]?.id).toBe(made[made.length - 1]?.id);
  });

  it("shows nothing of one tenant to another", async () => {
    const { client: c } = sys;
    const t1 = newTenant();
    const t2 = newTenant();
    const a = await make(c, t1, "product:a", { feeds: ["user:x"] });
    await make(c, t1, "product:b");
    expect(await listAll(c, t2)).toEqual([]);
    expect((await c.servePromoted({ feed: { group: "user", id: "x" } }, server(t2))).records).toEqual([]);
    expect(await codeOf(c.retractPromoted({ id: a.id }, server(t2)))).toBe("NOT_FOUND");
    expect((await listAll(c, t1)).every((r) => !r.retractedAt)).toBe(true);
  });
});
