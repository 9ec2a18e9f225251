// Checks that the local MongoDB-wire server (FerretDB through scripts/infra.mjs, or MONGO_URL)
// does what the services rely on (atomic single-document updates and TTL indexes included: the
// launcher's front provides them on FerretDB), and, on FerretDB over PostgreSQL, that the
// launcher's companion GIN indexes exist and serve equality lookups.
//
//   node scripts/ferretdb/check.mjs
//
// Works in a throw-away database that it drops at the end. PostgreSQL checks use the psql CLI
// (PostgreSQL database feeds_ferretdb, or FERRETDB_POSTGRESQL_URL) and are skipped without it.

import { spawnSync } from 'node:child_process';
import { MongoClient } from 'mongodb';
import { ensureInfra, ferretdbLauncherSources } from '../infra.mjs';

const PG_URL = process.env.FERRETDB_POSTGRESQL_URL || 'postgres://postgres@127.0.0.1:5432/feeds_ferretdb';

let passed = 0;
let failed = 0;
let skipped = 0;
async function check(name, fn) {
  try {
    const note = await fn();
    if (note === 'skip') { skipped++; console.log(`skip - ${name}`); return; }
    passed++;
    console.log(`ok   - ${name}${note ? ` (${note})` : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL - ${name}: ${e.message}`);
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
async function expectCode(promise, code) {
  try { await promise; } catch (e) { assert(e.code === code, `expected code ${code}, got ${e.code} ${e.message}`); return; }
  throw new Error(`expected error code ${code}, got success`);
}

// Runs SQL through psql; returns rows as arrays of strings, or null when psql is unusable.
function psql(sql) {
  const r = spawnSync('psql', ['-X', '-A', '-t', '-F', '\t', '-v', 'ON_ERROR_STOP=1', PG_URL, '-c', sql], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return null;
  return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t'));
}
const lit = (s) => `'${String(s).replaceAll("'", "''")}'`;

// Names of the indexes on the PostgreSQL table backing db.coll ({btree, gin}), or null.
function pgIndexes(db, coll) {
  const rows = psql(`SELECT ic.relname, am.amname FROM pg_index i
    JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
    JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = ${lit(db)} AND t.relname LIKE ${lit(`${coll.toLowerCase()}_%`)}
      AND t.relname <> '_ferretdb_database_metadata'`);
  if (!rows) return null;
  return { btree: rows.filter((r) => r[1] === 'btree').map((r) => r[0]), gin: rows.filter((r) => r[1] === 'gin').map((r) => r[0]) };
}

// Index names PostgreSQL's plan for a find uses, through FerretDB's explain command.
async function planIndexes(db, find) {
  const ex = await db.command({ explain: { find: find.coll, filter: find.filter }, verbosity: 'queryPlanner' });
  const names = [];
  (function walk(n) { if (n && typeof n === 'object') { if (n['Index Name']) names.push(n['Index Name']); Object.values(n).forEach(walk); } })(ex.queryPlanner);
  return names;
}

const { mongoUrl } = await ensureInfra({});
const client = await MongoClient.connect(mongoUrl, { serverSelectionTimeoutMS: 10_000 });
const dbName = `ferretdb_check_${Date.now().toString(36)}`;
const db = client.db(dbName);
let onPostgres = false;

try {
  const hello = await db.command({ hello: 1 });
  const build = await db.command({ buildInfo: 1 });
  console.log(`# ${mongoUrl}: ${build.ferretdbVersion ? `FerretDB ${build.ferretdbVersion}` : `MongoDB ${build.version}`}, maxWireVersion ${hello.maxWireVersion}`);

  const feeds = db.collection('feeds');
  const counters = db.collection('counters');

  await check('duplicate _id answers code 11000', async () => {
    await feeds.insertOne({ _id: 'a', tenant_id: 't1', user_id: 'u1' });
    await expectCode(feeds.insertOne({ _id: 'a', tenant_id: 't1', user_id: 'u2' }), 11000);
  });

  await check('compound unique index answers code 11000', async () => {
    await feeds.createIndex({ tenant_id: 1, user_id: 1 }, { unique: true });
    await feeds.insertOne({ _id: 'b', tenant_id: 't1', user_id: 'u2' });
    await expectCode(feeds.insertOne({ _id: 'c', tenant_id: 't1', user_id: 'u2' }), 11000);
    await feeds.insertOne({ _id: 'd', tenant_id: 't2', user_id: 'u2' }); // other tenant: allowed
  });

  await check('findOneAndUpdate with upsert (insert, then update)', async () => {
    const q = { _id: 't1:cursor' };
    const u = { $setOnInsert: { tenant_id: 't1' }, $set: { pos: 1 }, $inc: { n: 1 } };
    const first = await counters.findOneAndUpdate(q, u, { upsert: true, returnDocument: 'after' });
    assert(first?.n === 1 && first.tenant_id === 't1', `first: ${JSON.stringify(first)}`);
    const second = await counters.findOneAndUpdate(q, u, { upsert: true, returnDocument: 'after' });
    assert(second?.n === 2, `second: ${JSON.stringify(second)}`);
  });

  await check('$inc on nested fields', async () => {
    await counters.updateOne({ _id: 'nested' }, { $inc: { 'stats.likes': 2, 'stats.views.total': 1 } }, { upsert: true });
    await counters.updateOne({ _id: 'nested' }, { $inc: { 'stats.likes': 3, 'stats.views.total': 1 } });
    const d = await counters.findOne({ _id: 'nested' });
    assert(d?.stats?.likes === 5 && d.stats.views.total === 2, JSON.stringify(d));
  });

  await check('bulkWrite upserts', async () => {
    const ops = ['x', 'y', 'z'].map((k) => ({ updateOne: { filter: { _id: `bulk:${k}` }, update: { $inc: { n: 1 }, $set: { tenant_id: 't1' } }, upsert: true } }));
    const r1 = await counters.bulkWrite(ops, { ordered: false });
    assert(r1.upsertedCount === 3, `first upsertedCount ${r1.upsertedCount}`);
    const r2 = await counters.bulkWrite(ops, { ordered: false });
    assert(r2.upsertedCount === 0 && r2.modifiedCount === 3, `second upserted ${r2.upsertedCount} modified ${r2.modifiedCount}`);
  });

  await check('the launcher answering is the one of these sources (buildInfo feedsLauncher)', async () => {
    if (!build.ferretdbVersion) return 'skip';
    assert(build.feedsLauncher === ferretdbLauncherSources(), `feedsLauncher ${build.feedsLauncher ?? '(none: no front)'}`);
    return build.feedsLauncher.slice(0, 12);
  });

  await check('100 concurrent $inc and 30 racing version-conditioned updates are exact', async () => {
    await counters.insertOne({ _id: 'race', n: 0, v: 0 });
    await Promise.all(Array.from({ length: 100 }, () => counters.updateOne({ _id: 'race' }, { $inc: { n: 1 } })));
    const d = await counters.findOne({ _id: 'race' });
    assert(d?.n === 100, `$inc applied ${d?.n} of 100`);
    const rs = await Promise.all(Array.from({ length: 30 }, () => counters.updateOne({ _id: 'race', v: 0 }, { $set: { v: 1 } })));
    const modified = rs.reduce((a, r) => a + r.modifiedCount, 0);
    assert(modified === 1, `${modified} conditioned updates modified the document`);
  });

  await check('TTL index: accepted, listed with expireAfterSeconds', async () => {
    const s = db.collection('sessions');
    await s.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    const ix = (await s.indexes()).find((i) => i.name === 'expires_at_1');
    assert(ix?.expireAfterSeconds === 0, JSON.stringify(ix));
  });

  await check('aggregate $match/$group/$sort/$limit', async () => {
    const ev = db.collection('events');
    await ev.insertMany([1, 2, 3, 4, 5, 6].map((i) => ({ tenant_id: 't1', verb: i % 3 === 0 ? 'like' : i % 2 ? 'post' : 'share', n: i })));
    const out = await ev.aggregate([
      { $match: { tenant_id: 't1' } },
      { $group: { _id: '$verb', total: { $sum: '$n' } } },
      { $sort: { total: -1, _id: 1 } },
      { $limit: 2 },
    ]).toArray();
    assert(JSON.stringify(out) === JSON.stringify([{ _id: 'like', total: 9 }, { _id: 'post', total: 6 }]), JSON.stringify(out));
  });

  // FerretDB v1 bug (FerretDB issue #4616): in a $group with several accumulators only the first
  // one sees the documents; the others get an exhausted iterator (0, null...). MongoDB is right.
  {
    const out = await db.collection('events').aggregate([
      { $match: { verb: 'like' } },
      { $group: { _id: null, count: { $sum: 1 }, total: { $sum: '$n' } } },
    ]).toArray();
    const right = out[0]?.count === 2 && out[0]?.total === 9;
    console.log(`${right ? 'note' : 'WARN'} - $group with 2 accumulators: ${JSON.stringify(out[0])}${right ? '' : ' (FerretDB v1 bug: only the first accumulator sees documents; use one accumulator per $group)'}`);
  }

  await check('countDocuments', async () => {
    const n = await feeds.countDocuments({ tenant_id: 't1' });
    assert(n === 2, `got ${n}`);
    assert((await feeds.countDocuments({})) === 3, 'all');
  });

  onPostgres = pgIndexes(dbName, 'feeds')?.btree.length > 0;

  await check('createIndex after start-up gets its GIN companions (psql)', async () => {
    if (!onPostgres) return 'skip';
    await feeds.createIndex({ 'meta.kind': 1, created_at: -1 }, { name: 'late' });
    const { btree, gin } = pgIndexes(dbName, 'feeds');
    // btree: _id_, tenant_id_1_user_id_1, late; GIN: _id, tenant_id, user_id, meta.kind, created_at.
    assert(btree.length === 3, `btree ${btree}`);
    assert(gin.length === 5, `gin ${gin}`);
    return `${gin.length} companions`;
  });

  await check('dropIndex drops companions no other index needs', async () => {
    if (!onPostgres) return 'skip';
    await feeds.dropIndex('late');
    const names = (await feeds.indexes()).map((i) => i.name).sort();
    assert(JSON.stringify(names) === JSON.stringify(['_id_', 'tenant_id_1_user_id_1']), `listIndexes ${names}`);
    const { gin } = pgIndexes(dbName, 'feeds');
    assert(gin.length === 3, `gin ${gin}`);
  });

  await check('findOne by _id and {tenant_id, user_id} use the GIN companions (explain)', async () => {
    if (!onPostgres) return 'skip';
    // Enough rows that PostgreSQL prefers an index to a sequential scan.
    const big = db.collection('lookups');
    await big.createIndex({ tenant_id: 1, user_id: 1 });
    await big.insertMany(Array.from({ length: 3000 }, (_, i) => ({ _id: `id${i}`, tenant_id: `t${i % 20}`, user_id: `u${i}` })));
    const byId = await planIndexes(db, { coll: 'lookups', filter: { _id: 'id1234' } });
    const byPair = await planIndexes(db, { coll: 'lookups', filter: { tenant_id: 't14', user_id: 'u1234' } });
    assert(byId.some((n) => n.endsWith('_fgin')), `_id plan uses ${byId.join(',') || 'no index'}`);
    assert(byPair.some((n) => n.endsWith('_fgin')), `pair plan uses ${byPair.join(',') || 'no index'}`);
    return `${byId.join(',')} | ${byPair.join(',')}`;
  });

  await check('dropDatabase removes the database (and its schema)', async () => {
    await db.dropDatabase();
    const { databases } = await client.db('admin').command({ listDatabases: 1, nameOnly: true });
    assert(!databases.some((d) => d.name === dbName), 'still listed');
    if (onPostgres) assert(psql(`SELECT 1 FROM pg_namespace WHERE nspname = ${lit(dbName)}`)?.length === 0, 'schema still there');
  });
} finally {
  await client.db(dbName).dropDatabase().catch(() => {});
  await client.close();
}

console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed ? 1 : 0;
