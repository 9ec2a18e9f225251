// What the FerretDB launcher's front costs: the same operations through the front (which locks
// update/delete/findAndModify) and straight to FerretDB's internal port, on a private launcher
// (scripts/infra.mjs startPrivateFerretdb, same backend as the shared one).
//
//   node test/bench/store-front.mjs [--ops 2000] [--concurrency 50]
//
// Cases: (a) $inc spread over 100 documents, (b) $inc on one document, (c) find by _id,
// (d) insertOne. Each prints ops/s both ways, the ratio (front / straight) and, for $inc, the
// updates lost. Straight to FerretDB, the $inc cases run on fewer connections (--straight-writes,
// default 10): FerretDB v1 deadlocks for good once as many updates as half its PostgreSQL pool
// run at once (the front bounds them; this script's private launcher has a pool of 30, so the
// front lets 10 in at once: PostgreSQL's 100 connections are shared with the other launchers).

import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { startPrivateFerretdb } from '../../scripts/infra.mjs';

const require = createRequire(import.meta.url);
const { MongoClient } = require('mongodb');

const { values: opts } = parseArgs({
  options: {
    ops: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '50' },
    'straight-writes': { type: 'string', default: "10" },
  },
});
const OPS = Number(opts.ops);
const CONC = Number(opts.concurrency);
const STRAIGHT_WRITES = Number(opts['straight-writes']);
const POOL = 30;

const server = await startPrivateFerretdb({
  postgresqlUrl: `postgres://postgres@127.0.0.1:5432/feeds_ferretdb?pool_max_conns=${POOL}`,
  args: ['-max-writes', String(POOL / 3)],
});
const dbName = `bench_front_${Date.now().toString(36)}`;
const clients = [];
async function connect(url, conns) {
  const c = await MongoClient.connect(url, { maxPoolSize: conns, minPoolSize: conns });
  clients.push(c);
  return c.db(dbName);
}

// Runs `op(i)` OPS times with `conc` in flight; returns ops/s.
async function run(conc, op) {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: conc }, async () => {
    while (next < OPS) await op(next++);
  }));
  return OPS / (Number(process.hrtime.bigint() - t0) / 1e9);
}

try {
  const front = await connect(server.url, CONC);
  const info = await front.admin().command({ buildInfo: 1 });
  const internal = info.feedsLauncherInternal;
  if (!internal) throw new Error('the private server is not the FerretDB launcher (TEST_INFRA=containers?)');
  const straight = await connect(`mongodb://${internal}/?directConnection=true&retryWrites=false`, CONC);
  const straightW = await connect(`mongodb://${internal}/?directConnection=true&retryWrites=false`, STRAIGHT_WRITES);
  console.log(`# ${OPS} ops, concurrency ${CONC} (straight $inc: ${STRAIGHT_WRITES}); front ${server.url}, FerretDB ${internal}; PostgreSQL pool ${POOL}`);

  const rows = [];
  async function bench(name, prepare, op, check) {
    const out = { case: name };
    for (const [way, db, conc] of [['front', front, CONC], ['straight', name.includes('$inc') ? straightW : straight, name.includes('$inc') ? STRAIGHT_WRITES : CONC]]) {
      const col = db.collection(`${name.replace(/\W+/g, '_')}_${way}`);
      await prepare(col);
      await run(Math.min(conc, 10), (i) => op(col, i)); // warm-up (connections, statement cache)
      await prepare(col, true);
      out[`${way} ops/s`] = Math.round(await run(conc, (i) => op(col, i)));
      if (check) out[`${way} lost`] = await check(col);
    }
    out.ratio = +(out['front ops/s'] / out['straight ops/s']).toFixed(2);
    rows.push(out);
    console.log(JSON.stringify(out));
  }

  const counters = async (col, n, reset) => {
    if (reset) await col.deleteMany({});
    else await col.drop().catch(() => {});
    await col.insertMany(Array.from({ length: n }, (_, i) => ({ _id: i, n: 0 })));
  };
  const lost = async (col) => {
    const [{ total } = { total: 0 }] = await col.aggregate([{ $group: { _id: null, total: { $sum: '$n' } } }]).toArray();
    return OPS - total;
  };

  await bench('(a) $inc over 100 docs', (col, reset) => counters(col, 100, reset), (col, i) => col.updateOne({ _id: i % 100 }, { $inc: { n: 1 } }), lost);
  await bench('(b) $inc on one doc', (col, reset) => counters(col, 1, reset), (col) => col.updateOne({ _id: 0 }, { $inc: { n: 1 } }), lost);
  await bench('(c) find by _id', (col, reset) => (reset ? undefined : counters(col, 100, false)), (col, i) => col.findOne({ _id: i % 100 }));
  await bench('(d) insertOne', async (col) => { await col.deleteMany({}); }, (col) => col.insertOne({ at: new Date(), pad: 'x'.repeat(200) }));
  console.table(rows);
} finally {
  await clients[0]?.db(dbName).dropDatabase().catch(() => {});
  for (const c of clients) await c.close().catch(() => {});
  await server.stop({ signal: 'SIGTERM' });
}
