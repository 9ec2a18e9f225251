// Benchmark: what the launcher's companion GIN indexes buy on FerretDB v1 over PostgreSQL.
//
//   node test/bench/ferretdb-indexes.mjs [docs]      (default 100000 documents, ~1-2 minutes)
//
// Starts a private FerretDB (scripts/infra.mjs) on the shared PostgreSQL database, loads a
// throw-away MongoDB database with `docs` documents, then times, one lookup at a time:
//   - findOne by _id
//   - find({ tenant_id, user_id }) (both fields under one compound index, one match)
// first with the companion GIN indexes, then after dropping them with
// `SELECT ferretdb_gin.drop_all(<schema>)` (psql), and prints p50 / mean per lookup and speed-ups.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { startPrivateFerretdb } from '../../scripts/infra.mjs';

const PG_URL = process.env.FERRETDB_POSTGRESQL_URL || 'postgres://postgres@127.0.0.1:5432/feeds_ferretdb';
const TENANTS = 50;
const BATCH = 1000;

function psql(sql) {
  const r = spawnSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', PG_URL, '-c', sql], { encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`psql failed: ${r.error?.message || r.stderr}`);
  return r.stdout.trim();
}
const lit = (s) => `'${String(s).replaceAll("'", "''")}'`;

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { n: s.length, p50: +s[Math.floor(s.length / 2)].toFixed(3), mean: +mean.toFixed(3), p95: +s[Math.floor(s.length * 0.95)].toFixed(3) };
}

// Times `n` sequential calls of fn(i), after `warm` untimed ones; milliseconds per call.
async function time(n, warm, fn) {
  for (let i = 0; i < warm; i++) await fn(i + n);
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    samples.push(performance.now() - t0);
  }
  return stats(samples);
}

// Index names in PostgreSQL's plan for a find, through FerretDB's explain command.
async function planIndexes(db, coll, filter) {
  const ex = await db.command({ explain: { find: coll, filter }, verbosity: 'queryPlanner' });
  const names = [];
  (function walk(n) { if (n && typeof n === 'object') { if (n['Index Name']) names.push(n['Index Name']); Object.values(n).forEach(walk); } })(ex.queryPlanner);
  return names.length ? names.join('+') : 'seq scan';
}

/**
 * @param {{ log?: (msg: string) => void, docs?: number, nWith?: number, nWithout?: number }} [opts]
 */
export async function run({ log = (m) => process.stderr.write(`[bench] ${m}\n`), docs = 100_000, nWith = 400, nWithout = 60 } = {}) {
  psql('SELECT 1'); // fail early without psql / PostgreSQL: the benchmark is about the PostgreSQL backend
  const server = await startPrivateFerretdb({ backend: 'postgresql', log });
  const client = await MongoClient.connect(server.url);
  const dbName = `bench_ferretdb_idx_${Date.now().toString(36)}`;
  const db = client.db(dbName);
  const coll = db.collection('items');
  try {
    log(`loading ${docs} documents into ${dbName}.items (insertMany, batches of ${BATCH})...`);
    let t0 = performance.now();
    const ids = [];
    const pairs = [];
    for (let start = 0; start < docs; start += BATCH) {
      const batch = [];
      for (let i = start; i < Math.min(docs, start + BATCH); i++) {
        // tenant_id alone matches docs/50, user_id alone 50, the pair exactly one document.
        batch.push({ tenant_id: `tenant-${i % TENANTS}`, user_id: `user-${Math.floor(i / TENANTS)}`, seq: i, verb: 'post', body: `activity ${i} lorem ipsum dolor sit amet` });
      }
      const r = await coll.insertMany(batch, { ordered: false });
      for (const id of Object.values(r.insertedIds)) ids.push(id);
      for (const d of batch) if (d.seq % 97 === 0) pairs.push({ tenant_id: d.tenant_id, user_id: d.user_id });
    }
    const loadS = (performance.now() - t0) / 1000;
    log(`loaded in ${loadS.toFixed(1)}s`);

    t0 = performance.now();
    await coll.createIndex({ tenant_id: 1, user_id: 1 }, { unique: true });
    const indexS = (performance.now() - t0) / 1000;
    psql(`ANALYZE ${dbName}.${psql(`SELECT quote_ident(relname) FROM pg_class WHERE relkind = 'r' AND relnamespace = ${lit(dbName)}::regnamespace AND relname LIKE 'items\\_%'`)}`);
    const gins = Number(psql(`SELECT count(*) FROM pg_indexes WHERE schemaname = ${lit(dbName)} AND indexname LIKE '%\\_fgin'`));
    log(`compound unique index + ${gins} GIN companions built in ${indexS.toFixed(1)}s; ANALYZE done`);

    const pick = (arr, i) => arr[(i * 7919) % arr.length]; // deterministic spread over the data
    const byId = (i) => coll.findOne({ _id: pick(ids, i) });
    const byPair = (i) => coll.find(pick(pairs, i)).toArray();

    const measure = async (n, label) => {
      const plans = { findById: await planIndexes(db, 'items', { _id: ids[0] }), findByPair: await planIndexes(db, 'items', pairs[0]) };
      log(`${label}: plans ${JSON.stringify(plans)}`);
      const r = { findById: await time(n, 10, byId), findByPair: await time(n, 10, byPair), plans };
      log(`${label}: findOne by _id p50 ${r.findById.p50} ms mean ${r.findById.mean} ms; find {tenant_id,user_id} p50 ${r.findByPair.p50} ms mean ${r.findByPair.mean} ms`);
      return r;
    };

    const withGin = await measure(nWith, 'with GIN');
    const dropped = Number(psql(`SELECT ferretdb_gin.drop_all(${lit(dbName)})`));
    log(`dropped ${dropped} GIN companions`);
    const withoutGin = await measure(nWithout, 'without GIN');

    // Sanity: both variants found what they looked for.
    const one = await byPair(0);
    if (one.length !== 1) throw new Error(`pair lookup returned ${one.length} documents`);

    const ratio = (k, m) => +(withoutGin[k][m] / withGin[k][m]).toFixed(1);
    const speedup = {
      findById: { p50: ratio('findById', 'p50'), mean: ratio('findById', 'mean') },
      findByPair: { p50: ratio('findByPair', 'p50'), mean: ratio('findByPair', 'mean') },
    };
    return { docs, loadSeconds: +loadS.toFixed(1), withGin, withoutGin, speedup };
  } finally {
    await db.dropDatabase().catch(() => {});
    await client.close();
    await server.stop({ signal: 'SIGTERM' });
  }
}

const isMain = (() => {
  try { return fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url)); } catch { return false; }
})();
if (isMain) {
  const docs = Number(process.argv[2]) || 100_000;
  const r = await run({ docs });
  const row = (name, k) => `${name.padEnd(28)} ${String(r.withGin[k].p50).padStart(9)} ${String(r.withGin[k].mean).padStart(9)} ${String(r.withoutGin[k].p50).padStart(11)} ${String(r.withoutGin[k].mean).padStart(11)} ${`${r.speedup[k].p50}x`.padStart(9)} ${`${r.speedup[k].mean}x`.padStart(9)}`;
  console.log(`FerretDB ${r.docs} documents, ms per lookup (one at a time)`);
  console.log(`${'lookup'.padEnd(28)} ${'GIN p50'.padStart(9)} ${'GIN mean'.padStart(9)} ${'no-GIN p50'.padStart(11)} ${'no-GIN mean'.padStart(11)} ${'x p50'.padStart(9)} ${'x mean'.padStart(9)}`);
  console.log(row('findOne by _id', 'findById'));
  console.log(row('find {tenant_id, user_id}', 'findByPair'));
  console.log(JSON.stringify(r));
}
