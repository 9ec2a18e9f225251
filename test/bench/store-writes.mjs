// What one write costs the store, by kind: the CPU of the shared servers (FerretDB and
// PostgreSQL here, mongod where it runs) per document written, 10 writers at once, on a scratch
// database of the running store (MONGO_URL, default the local launcher). The figures behind
// docs/benchmarks.md's "why 8, 9 and 14 miss": on FerretDB v1 an update costs about the same
// whatever it changes and however it is sent (one per command or 50 to a bulkWrite), while
// inserts get cheaper per document in larger batches.
//
//   node test/bench/store-writes.mjs [--docs 2000]
import { parseArgs } from "node:util";
import { infraSecondsBy } from "./lib.mjs";

const { values: opts } = parseArgs({ options: { docs: { type: "string", default: "2000" } } });
const N = Number(opts.docs);
process.env.MONGO_URL ??= "mongodb://127.0.0.1:27017/?retryWrites=false";
const { bareMongo } = await import("./lib.mjs");
const client = await bareMongo();
const db = client.db(`store_writes_${Date.now().toString(36)}`);
const coll = db.collection("docs");
const WRITERS = 10;
const KEYS = 500;

/** Runs `op(i)` for i < N on WRITERS writers; `per` documents per call. */
async function measure(label, op, per = 1) {
  const s0 = infraSecondsBy();
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < N) {
        const i = next;
        next += per;
        await op(i);
      }
    }),
  );
  const wall = (Date.now() - t0) / 1000;
  const s1 = infraSecondsBy();
  const ms = (name) => (((s1.by[name] ?? 0) - (s0.by[name] ?? 0)) * 1000) / N;
  const servers = Object.keys(s1.by).filter((k) => ms(k) > 0.005);
  console.log(
    `${label.padEnd(52)} ${String(Math.round(N / wall)).padStart(6)} docs/s  ${((s1.total - s0.total) * 1000 / N).toFixed(2)} ms CPU/doc (${servers.map((k) => `${k} ${ms(k).toFixed(2)}`).join(", ")})`,
  );
}

const small = (i, tag) => ({ _id: `${tag}${i}`, tenant_id: "t", owner: "o", verb: "react", actor: `user:u${i}`, created_at: new Date(), seen_at: null, read_at: null });
const keyOf = (i) => `k${i % KEYS}`;
try {
  await coll.insertMany(Array.from({ length: KEYS }, (_, i) => ({ _id: `k${i}`, tenant_id: "t", n: 0, applied: [], pending: [{ id: "x", at: new Date() }] })));
  await measure("insertOne", (i) => coll.insertOne(small(i, "a")));
  await measure("insertMany, 50 documents each", (i) => coll.insertMany(Array.from({ length: 50 }, (_, j) => small(i + j, "b"))), 50);
  await measure("updateOne $inc by _id", (i) => coll.updateOne({ _id: keyOf(i), tenant_id: "t" }, { $inc: { n: 1 } }));
  await measure("updateOne once-only $inc + $push of a change id", (i) =>
    coll.updateOne({ _id: keyOf(i), tenant_id: "t", applied: { $ne: `c${i}` } }, { $inc: { n: 1 }, $push: { applied: `c${i}` } }),
  );
  await measure("findOneAndUpdate $inc, the document after", (i) => coll.findOneAndUpdate({ _id: keyOf(i), tenant_id: "t" }, { $inc: { n: 1 } }, { returnDocument: "after" }));
  await measure("updateOne $pull of a change id (a clear)", (i) => coll.updateOne({ _id: keyOf(i) }, { $pull: { applied: `c${i}` } }));
  await measure("bulkWrite of 50 once-only updateOnes", (i) =>
    coll.bulkWrite(
      Array.from({ length: 50 }, (_, j) => ({ updateOne: { filter: { _id: keyOf(i + j), applied: { $ne: `d${i + j}` } }, update: { $inc: { n: 1 }, $push: { applied: `d${i + j}` } } } })),
      { ordered: false },
    ),
  50);
  await measure("bulkWrite of 50 $pull clears", (i) => coll.bulkWrite(Array.from({ length: 50 }, (_, j) => ({ updateOne: { filter: { _id: keyOf(i + j) }, update: { $pull: { applied: `d${i + j}` } } } })), { ordered: false }), 50);
  await measure("findOne by _id (a read, for scale)", (i) => coll.findOne({ _id: keyOf(i), tenant_id: "t" }));
} finally {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
}
