import { randomBytes } from "node:crypto";
import { MongoClient, type Collection, type Db, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureInfra, startPrivateFerretdb, type PrivateServer } from "../../scripts/infra.mjs";

// MongoDB's single-document atomicity on the storage the services use (FEEDS_TEST_MONGO_URL, else
// what scripts/infra.mjs ensures on 27017: the current FerretDB launcher, or a real mongod), in a
// database of its own that is dropped afterwards. FerretDB v1 runs
// every update as an unlocked read and then a write; the launcher's front (scripts/ferretdb)
// locks around such commands. The same races straight against FerretDB's internal port (which
// the launcher reports in buildInfo as feedsLauncherInternal) must lose updates: that shows the
// races are real and the front is what fixes them. TTL indexes, which FerretDB refuses and the
// launcher applies itself, run on a private launcher started with a 1 s period.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const times = <T>(n: number, fn: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => fn(i)));

/** expireAfterSeconds of index `name` as listIndexes shows it. */
async function ttlOf<T extends Document>(c: Collection<T>, name: string) {
  const indexes = (await c.listIndexes().toArray()) as { name?: string; expireAfterSeconds?: number }[];
  return indexes.find((ix) => ix.name === name)?.expireAfterSeconds;
}

interface Counter {
  _id: string;
  n: number;
  v: number;
}

/** The races every case runs: their outcomes, exact on MongoDB. */
async function incRace(db: Db, n: number) {
  const c = db.collection<Counter>(`inc_${randomBytes(3).toString("hex")}`);
  await c.insertOne({ _id: "x", n: 0, v: 0 });
  await times(n, () => c.updateOne({ _id: "x" }, { $inc: { n: 1 } }));
  return (await c.findOne({ _id: "x" }))?.n ?? 0;
}

async function conditionalRace(db: Db, n: number) {
  const c = db.collection<Counter>(`cond_${randomBytes(3).toString("hex")}`);
  await c.insertOne({ _id: "x", n: 0, v: 0 });
  const results = await times(n, () => c.updateOne({ _id: "x", v: 0 }, { $set: { v: 1 } }));
  return results.reduce((sum, r) => sum + r.modifiedCount, 0);
}

describe("store atomicity through the launcher's front", { timeout: 60_000 }, () => {
  let client: MongoClient;
  let db: Db;
  let internal: string | undefined; // FerretDB behind the front, when the storage is the launcher
  let bypass: MongoClient | undefined;
  let bypassDb: Db;

  beforeAll(async () => {
    // ensureInfra, not only the default URL: it replaces a launcher of older sources.
    const url = process.env.FEEDS_TEST_MONGO_URL ?? (await ensureInfra({ log: () => undefined })).mongoUrl;
    client = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5_000 });
    db = client.db(`kit_atomic_${randomBytes(4).toString("hex")}`);
    const info = await db.admin().command({ buildInfo: 1 });
    internal = typeof info.feedsLauncherInternal === "string" ? info.feedsLauncherInternal : undefined;
    if (internal) {
      // Few connections: FerretDB v1 deadlocks when its PostgreSQL pool (50) fills with updates,
      // each holding its read's connection while waiting for a second one (the front bounds them).
      bypass = await MongoClient.connect(`mongodb://${internal}/?directConnection=true&retryWrites=false`, { maxPoolSize: 8 });
      bypassDb = bypass.db(db.databaseName);
    }
  }, 180_000);
  afterAll(async () => {
    await bypass?.close();
    await db?.dropDatabase();
    await client?.close();
  });

  it("applies 200 concurrent $inc on one document exactly", async () => {
    expect(await incRace(db, 200)).toBe(200);
  });

  it("lets exactly one of 50 updates conditioned on a version modify the document", async () => {
    expect(await conditionalRace(db, 50)).toBe(1);
  });

  it("answers 20 concurrent first upserts of one key on a unique index without error, all applied", async () => {
    const c = db.collection<{ key: string; n: number }>("upserts");
    await c.createIndex({ key: 1 }, { unique: true });
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => c.updateOne({ key: "k" }, { $inc: { n: 1 } }, { upsert: true })));
    expect(results.filter((r) => r.status === "rejected").map((r) => String(r.reason))).toEqual([]);
    expect(await c.countDocuments({ key: "k" })).toBe(1);
    expect((await c.findOne({ key: "k" }))?.n).toBe(20);
  });

  it("gives 50 racing findOneAndUpdate calls distinct results: one wins a version, $inc returns 1..50", async () => {
    const c = db.collection<Counter>("fam");
    await c.insertMany([{ _id: "cond", n: 0, v: 0 }, { _id: "inc", n: 0, v: 0 }]);
    const won = await times(50, () => c.findOneAndUpdate({ _id: "cond", v: 0 }, { $set: { v: 1 } }));
    expect(won.filter((d) => d !== null)).toHaveLength(1);
    const after = await times(50, () => c.findOneAndUpdate({ _id: "inc" }, { $inc: { n: 1 } }, { returnDocument: "after" }));
    expect(after.map((d) => d?.n).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  // A race on 8 connections loses updates most of the time, not every time: up to 5 rounds.
  async function lossyRounds(race: () => Promise<number>, lost: (outcome: number) => boolean) {
    const outcomes: number[] = [];
    for (let round = 0; round < 5 && !outcomes.some(lost); round++) outcomes.push(await race());
    return outcomes;
  }

  it("loses $inc updates straight on FerretDB's internal port (what the front is for)", async (ctx) => {
    ctx.skip(!internal, "the storage is not the FerretDB launcher (no feedsLauncherInternal in buildInfo): nothing behind a front to bypass");
    const applied = await lossyRounds(() => incRace(bypassDb, 200), (n) => n < 200);
    console.log(`straight to FerretDB (${internal}): 200 concurrent $inc applied ${applied.join(", then ")}`);
    expect(Math.min(...applied)).toBeLessThan(200);
  });

  it("lets several conditioned updates modify the document straight on FerretDB's internal port", async (ctx) => {
    ctx.skip(!internal, "the storage is not the FerretDB launcher (no feedsLauncherInternal in buildInfo): nothing behind a front to bypass");
    const modified = await lossyRounds(() => conditionalRace(bypassDb, 50), (n) => n > 1);
    console.log(`straight to FerretDB (${internal}): 50 updates conditioned on {v: 0} modified ${modified.join(", then ")}`);
    expect(Math.max(...modified)).toBeGreaterThan(1);
  });
});

describe("TTL indexes", { timeout: 120_000 }, () => {
  // A private launcher, so the test sets the sweep period (the shared one sweeps every 5 s).
  // Under TEST_INFRA=containers startPrivateFerretdb answers with MongoDB, whose TTL monitor
  // runs every 60 s: the expiry is then not waited for.
  let server: PrivateServer;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    server = await startPrivateFerretdb({ ttlPeriod: "1s" });
    client = await MongoClient.connect(server.url);
    db = client.db(`kit_ttl_${randomBytes(4).toString("hex")}`);
  }, 180_000);
  afterAll(async () => {
    await db?.dropDatabase();
    await client?.close();
    await server?.stop({ signal: "SIGTERM" });
  });

  it("shows expireAfterSeconds in listIndexes and deletes documents whose date is past, only those", async (ctx) => {
    const c = db.collection<{ _id: string; at?: unknown }>("sessions");
    await c.createIndex({ at: 1 }, { expireAfterSeconds: 1 });
    expect(await ttlOf(c, "at_1")).toBe(1);

    const past = new Date(Date.now() - 10_000);
    const future = new Date(Date.now() + 600_000);
    await c.insertMany([
      { _id: "past", at: past },
      { _id: "future", at: future },
      { _id: "array", at: [future, past] }, // the earliest date counts
      { _id: "string", at: past.toISOString() }, // not a date: never expires
      { _id: "missing" },
    ]);
    ctx.skip(server.pid === null, "MongoDB container: its TTL monitor runs every 60 s");
    const deadline = Date.now() + 1_000 + 7_000; // the period and a margin
    while ((await c.countDocuments({ _id: { $in: ["past", "array"] } })) > 0 && Date.now() < deadline) await sleep(200);
    expect((await c.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id).sort()).toEqual(["future", "missing", "string"]);
  });

  it("forgets the TTL of a dropped index", async () => {
    const c = db.collection<{ at: Date }>("dropped");
    await c.createIndex({ at: 1 }, { expireAfterSeconds: 1 });
    await c.dropIndex("at_1");
    await c.createIndex({ at: 1 });
    expect(await ttlOf(c, "at_1")).toBeUndefined();
  });
});
