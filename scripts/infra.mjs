// Makes sure a MongoDB-wire server, NATS with JetStream and Redis listen on loopback, starting
// whichever is missing; also starts private throw-away instances for fault tests.
//
// Plain ESM on Node built-ins only: it runs before any npm install or TypeScript build.
//
//   node scripts/infra.mjs          -> ensures all three, prints {"mongoUrl","natsUrl","redisUrl","servers"}
//
// Env: MONGO_URL, NATS_URL, REDIS_URL are used as given (nothing is probed or started for them).
// Without MONGO_URL: mongod on PATH if any, else the FerretDB launcher in scripts/ferretdb
// (built with `go build` into .cache/ferretdb/, rebuilt only when its sources change).
// Servers started here are detached and outlive the caller; their logs are under .cache/. Each
// is recorded (pid, or Redis's pidfile) under .cache/infra/ (lib/started-servers.mjs), and
// `npm run stop-infra` (scripts/stop-infra.mjs) stops exactly those; a server found running is
// never stopped.
// The FerretDB launcher reads FERRETDB_* variables (scripts/ferretdb/main.go), e.g.
// FERRETDB_POSTGRESQL_URL; by default it uses PostgreSQL database feeds_ferretdb if PostgreSQL
// answers on 127.0.0.1:5432, else SQLite under .cache/ferretdb/sqlite. A running server is never
// restarted, with one exception: a FerretDB on 27017 that is not the launcher of the current
// sources (its buildInfo's feedsLauncher differs, or it has no front at all) is stopped and the
// current launcher started, if it is a launcher infra started (a ferretdb-launcher process) and
// is older: without the front, of an older launcherGeneration (scripts/ferretdb/main.go), or
// built in this checkout. A launcher of another checkout of the same or a newer generation is
// used as it is (two checkouts would otherwise keep replacing each other's). A foreign FerretDB
// without the launcher's front is an error (the services rely on the front for atomic updates
// and TTL indexes). A real mongod is always fine. The launcher's URL carries
// FerretDB's quirks: mongodb://127.0.0.1:27017/?retryWrites=false.
// Concurrent callers serialise through lock files in .cache/locks/: only one starts a server.
//
// Fault tests: startPrivateRedis / startPrivateNats / startPrivateFerretdb each return
// { url, port, pid, stop(), start() } for a server of their own on a free (or given) port;
// startRedisCluster a Redis Cluster of its own ({ url, ports, nodes, stop() }),
// startNatsCluster a NATS cluster of its own (three nodes with JetStream, each stoppable). Under
// TEST_INFRA=containers each is a container instead (scripts/lib/containers.mjs; MongoDB 7 for
// startPrivateFerretdb) behind the same handle, and `pid` is null.

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listenerPid, recordStarted, serverStatus } from './lib/started-servers.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_ROOT = path.resolve(HERE, '..');
const HOST = '127.0.0.1';
const PORTS = { mongo: 27017, nats: 4222, redis: 6379 };

const defaultLog = (msg) => process.stderr.write(`[infra] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Probes: open a TCP socket and speak just enough of each protocol to know who answers.

// Sends `payload` (may be empty) and resolves with what came back once `done(buf)` says the reply
// is complete; resolves null on refusal, timeout or early close.
function talk(port, payload, done, timeoutMs = 1500, host = HOST) {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    let settled = false;
    const sock = net.connect({ host, port });
    const finish = (v) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      closeGently(sock);
      resolve(v);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    sock.on('connect', () => { if (payload.length) sock.write(payload); });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (done(buf)) finish(buf);
    });
    sock.on('error', () => finish(null));
    sock.on('close', () => finish(null));
  });
}

// FIN rather than RST: servers log a reset connection as a warning (FerretDB does), a close as info.
function closeGently(sock) {
  sock.end();
  setTimeout(() => sock.destroy(), 500).unref();
}

/** True if something accepts TCP connections on host:port. */
export function portOpen(port, host = HOST, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const finish = (v) => { clearTimeout(timer); closeGently(sock); resolve(v); };
    const timer = setTimeout(() => finish(false), timeoutMs);
    sock.on('connect', () => finish(true));
    sock.on('error', () => finish(false));
  });
}

/** True if a Redis answers PING (an error reply such as NOAUTH still means Redis). */
export async function probeRedis(port = PORTS.redis, host = HOST) {
  const reply = await talk(port, Buffer.from('PING\r\n'), (b) => b.includes('\r\n'), 1500, host);
  return reply !== null && (reply.toString().startsWith('+PONG') || reply[0] === 0x2d /* - */);
}

/** The INFO object a NATS server greets with, or null. */
export async function probeNats(port = PORTS.nats, host = HOST) {
  const reply = await talk(port, Buffer.alloc(0), (b) => b.includes('\r\n'), 1500, host);
  const m = reply && /^INFO\s+(\{.*\})\s*\r\n/.exec(reply.toString()); // nats-server puts a space before CRLF
  if (!m) return null;
  try { return JSON.parse(m[1]); } catch { return null; }
}

const int32 = (n) => { const b = Buffer.alloc(4); b.writeInt32LE(n); return b; };

/** True if a MongoDB-wire server (mongod, FerretDB) answers an OP_MSG hello. */
export async function probeMongo(port = PORTS.mongo, host = HOST) {
  const id = crypto.randomInt(1, 2 ** 31 - 1);
  const reply = await talk(port, commandMessage(id, 'hello'), (b) => b.length >= 4 && b.length >= b.readInt32LE(0), 3000, host);
  return reply !== null && reply.length >= 16 && reply.readInt32LE(8) === id && reply.readInt32LE(12) === 2013;
}

// OP_MSG {<name>: 1, $db: "admin"}, hand-encoded BSON.
function commandMessage(requestId, name) {
  const db = Buffer.from('admin\0');
  const body = Buffer.concat([
    Buffer.from([0x10]), Buffer.from(`${name}\0`), int32(1), // int32 <name>: 1
    Buffer.from([0x02]), Buffer.from('$db\0'), int32(db.length), db, // string $db
    Buffer.from([0x00]),
  ]);
  const doc = Buffer.concat([int32(body.length + 4), body]);
  const msg = Buffer.concat([int32(0) /* flagBits */, Buffer.from([0]) /* section kind 0 */, doc]);
  return Buffer.concat([int32(16 + msg.length), int32(requestId), int32(0), int32(2013), msg]);
}

// The string and number fields at the top level of a BSON document (enough for buildInfo).
function bsonTopLevel(buf) {
  const out = {};
  const end = buf.readInt32LE(0) - 1;
  let p = 4;
  const cstring = () => { const z = buf.indexOf(0, p); const s = buf.toString('utf8', p, z); p = z + 1; return s; };
  while (p < end) {
    const type = buf[p++];
    const key = cstring();
    switch (type) {
      case 0x01: out[key] = buf.readDoubleLE(p); p += 8; break;
      case 0x02: case 0x0d: case 0x0e: { const n = buf.readInt32LE(p); out[key] = buf.toString('utf8', p + 4, p + 3 + n); p += 4 + n; break; }
      case 0x03: case 0x04: p += buf.readInt32LE(p); break;
      case 0x05: p += 5 + buf.readInt32LE(p); break;
      case 0x07: p += 12; break;
      case 0x08: out[key] = buf[p] === 1; p += 1; break;
      case 0x09: case 0x11: case 0x12: p += 8; break;
      case 0x0a: case 0x06: case 0x7f: case 0xff: break;
      case 0x0b: cstring(); cstring(); break;
      case 0x10: out[key] = buf.readInt32LE(p); p += 4; break;
      case 0x13: p += 16; break;
      default: return out; // not worth understanding
    }
  }
  return out;
}

/**
 * The top-level strings and numbers of the server's buildInfo reply ({ version, ferretdbVersion,
 * feedsLauncher, feedsLauncherInternal, ... }), or null if no MongoDB-wire server answers.
 */
export async function probeBuildInfo(port = PORTS.mongo, host = HOST) {
  const id = crypto.randomInt(1, 2 ** 31 - 1);
  const reply = await talk(port, commandMessage(id, 'buildInfo'), (b) => b.length >= 4 && b.length >= b.readInt32LE(0), 3000, host);
  if (reply === null || reply.length < 26 || reply.readInt32LE(8) !== id || reply.readInt32LE(12) !== 2013 || reply[20] !== 0) return null;
  try { return bsonTopLevel(reply.subarray(21)); } catch { return null; }
}

/** Polls `check` until it returns truthy; fails early if `child` exits first. */
export async function waitFor(check, { what, timeoutMs = 60_000, child = null, logFile = null }) {
  const deadline = Date.now() + timeoutMs;
  let exited = null;
  const onExit = (code, signal) => { exited = { code, signal }; };
  child?.once('exit', onExit);
  try {
    for (;;) {
      const v = await check();
      if (v) return v;
      if (exited) throw new Error(`${what} exited (code ${exited.code}, signal ${exited.signal}) before answering${tail(logFile)}`);
      if (Date.now() > deadline) throw new Error(`${what} did not answer within ${timeoutMs / 1000}s${tail(logFile)}`);
      await sleep(150);
    }
  } finally {
    child?.off('exit', onExit);
  }
}

// Last lines of a log file, for error messages.
function tail(file, lines = 15) {
  if (!file) return '';
  try {
    const text = fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    return text ? `\n--- ${file} (tail) ---\n${text}` : '';
  } catch { return ''; }
}

// ---------------------------------------------------------------------------------------------
// Executables and locks.

// Finds an executable on PATH or in the sbin folders Debian installs servers to.
function which(name) {
  const dirs = [...(process.env.PATH || '').split(path.delimiter), '/usr/local/go/bin', '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  for (const d of dirs) {
    if (!d) continue;
    const p = path.join(d, name);
    try { fs.accessSync(p, fs.constants.X_OK); if (fs.statSync(p).isFile()) return p; } catch { /* next */ }
  }
  return null;
}

function need(name, hint) {
  const p = which(name);
  if (!p) throw new Error(`${name} not found on PATH (${hint})`);
  return p;
}

function pidAlive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; }
}

// Runs fn while holding an exclusive lock file (O_EXCL create). While another live process holds
// it, waits, re-running `probe`: if the other holder's server starts answering, returns null
// without running fn. Locks of dead processes (or older than staleMs) are taken over.
async function withLock(file, { probe = null, timeoutMs = 15 * 60_000, staleMs = 15 * 60_000, log = defaultLog, what = file }, fn) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  let told = false;
  for (;;) {
    try {
      const fd = fs.openSync(file, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let holder = NaN;
    let age = 0;
    try { holder = Number.parseInt(fs.readFileSync(file, 'utf8'), 10); age = Date.now() - fs.statSync(file).mtimeMs; } catch { continue; /* just released */ }
    if (!pidAlive(holder) || age > staleMs) {
      try { fs.unlinkSync(file); } catch { /* someone else took it over */ }
      continue;
    }
    if (probe && (await probe())) return null;
    if (!told) { log(`waiting for process ${holder}, which is starting ${what}`); told = true; }
    if (Date.now() > deadline) throw new Error(`timed out waiting for lock ${file} held by ${holder}`);
    await sleep(300);
  }
  try {
    return await fn();
  } finally {
    try { fs.unlinkSync(file); } catch { /* gone */ }
  }
}

// Starts a server in its own session with output to logFile; it outlives this process.
function spawnDetached(cmd, args, logFile, opts = {}) {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const fd = fs.openSync(logFile, 'a');
  fs.writeSync(fd, `\n=== ${new Date().toISOString()} ${cmd} ${args.join(' ')}\n`);
  try {
    return spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd], ...opts });
  } finally {
    fs.closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// Go builds: a package of a module under scripts/, into .cache/, rebuilt only when its sources
// change (a hash of them beside the binary). The FerretDB launcher; helm and the manifest checker
// (scripts/k8s-check/tools.mjs) are built the same way.

function sourcesHash(srcDir, files, extra) {
  const h = crypto.createHash('sha256');
  for (const f of files) h.update(`${f}\0`).update(fs.readFileSync(path.join(srcDir, f))).update('\0');
  if (extra) h.update(`build\0${extra}`);
  return h.digest('hex');
}

/**
 * `go build` of package `pkg` (default the module itself) of the Go module in `srcDir` into `bin`,
 * unless `bin` was built from the same `files` (and `ldflags`); returns `bin`. Concurrent callers
 * wait for one build (lock .cache/locks/<name>-build.lock); progress goes to `log`.
 * @param {{ name: string, what: string, srcDir: string, files: string[], bin: string, pkg?: string,
 *   ldflags?: string, env?: Record<string, string>, coldNote?: string, root?: string, log?: (m: string) => void }} o
 */
export async function buildGo({ name, what, srcDir, files, bin, pkg = '.', ldflags = '', env = {}, coldNote = '', root = DEFAULT_ROOT, log = defaultLog }) {
  const hashFile = `${bin}.sha256`;
  // Build settings other than the sources count only when given (the launcher's hash predates them).
  const extra = pkg !== '.' || ldflags || Object.keys(env).length ? JSON.stringify({ pkg, ldflags, env }) : '';
  const hash = () => sourcesHash(srcDir, files, extra);
  const upToDate = () => {
    try { return fs.existsSync(bin) && fs.readFileSync(hashFile, 'utf8').trim() === hash(); } catch { return false; }
  };
  if (upToDate()) return bin;
  await withLock(path.join(root, '.cache', 'locks', `${name}-build.lock`), { log, what: `the ${what} build`, probe: async () => upToDate() }, async () => {
    if (upToDate()) return;
    const go = need('go', `install Go to build ${what}`);
    const expected = hash();
    const tmp = `${bin}.tmp-${process.pid}`;
    fs.mkdirSync(path.dirname(bin), { recursive: true });
    const rel = srcDir.startsWith(`${root}${path.sep}`) ? path.relative(root, srcDir) : srcDir;
    log(`building ${what} (go build ${pkg} in ${rel}${coldNote ? `; ${coldNote}` : ''})...`);
    const t0 = Date.now();
    const ticker = setInterval(() => log(`  still building ${what}... ${Math.round((Date.now() - t0) / 1000)}s`), 15_000);
    const args = ['build', '-buildvcs=false', '-trimpath', ...(ldflags ? ['-ldflags', ldflags] : []), '-o', tmp, pkg];
    let stderr = '';
    try {
      const code = await new Promise((resolve, reject) => {
        const p = spawn(go, args, { cwd: srcDir, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'pipe'] });
        p.stderr.on('data', (d) => { stderr += d; });
        p.on('error', reject);
        p.on('exit', resolve);
      });
      if (code !== 0) throw new Error(`go build of ${pkg} in ${rel} failed (exit ${code}):\n${stderr}`);
    } finally {
      clearInterval(ticker);
    }
    fs.renameSync(tmp, bin); // atomic: a concurrently starting process never sees half a binary
    fs.writeFileSync(hashFile, `${expected}\n`);
    log(`built ${what} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  });
  return bin;
}

const FERRETDB_SRC = path.join(HERE, 'ferretdb');
const FERRETDB_FILES = ['go.mod', 'go.sum', 'main.go', 'front.go', 'locks.go', 'ttl.go'];
const LAUNCHER_NAME = 'ferretdb-launcher';

/** Hash of the launcher's sources: baked into the binary, reported by its buildInfo as feedsLauncher. */
export function ferretdbLauncherSources() {
  return sourcesHash(FERRETDB_SRC, FERRETDB_FILES, '');
}

/** Builds scripts/ferretdb into <root>/.cache/ferretdb/ferretdb-launcher unless up to date; returns its path. */
export function buildFerretdbLauncher({ root = DEFAULT_ROOT, log = defaultLog } = {}) {
  return buildGo({
    name: 'ferretdb',
    what: 'the FerretDB launcher',
    srcDir: FERRETDB_SRC,
    files: FERRETDB_FILES,
    ldflags: `-X main.sourcesHash=${ferretdbLauncherSources()}`,
    bin: path.join(root, '.cache', 'ferretdb', LAUNCHER_NAME),
    coldNote: 'a cold build takes over a minute',
    root,
    log,
  });
}

// ---------------------------------------------------------------------------------------------
// ensureInfra

// Probe; if nothing answers, take the lock, probe again, start. If starting fails because the
// port got taken meanwhile (another caller without our lock), accept whatever now answers.
async function ensureService({ name, root, log, probe, start }) {
  if (await probe()) { log(`${name}: already running`); return; }
  await withLock(path.join(root, '.cache', 'locks', `${name}.lock`), { probe, log, what: name }, async () => {
    if (await probe()) return;
    try {
      await start();
      log(`${name}: started`);
    } catch (e) {
      if (await probe()) return;
      throw e;
    }
  });
}

async function startMongod({ root, log }) {
  const mongod = which('mongod');
  const dbpath = path.join(root, '.cache', 'mongod');
  const logFile = path.join(root, '.cache', 'mongod.log');
  fs.mkdirSync(dbpath, { recursive: true });
  log(`starting mongod (dbpath ${dbpath})`);
  const child = spawnDetached(mongod, ['--dbpath', dbpath, '--bind_ip', HOST, '--port', String(PORTS.mongo)], logFile, { cwd: root });
  await waitFor(() => probeMongo(PORTS.mongo), { what: 'mongod', child, logFile, timeoutMs: 60_000 });
  child.unref();
  recordStarted({ root, name: 'mongod', what: 'mongod', port: PORTS.mongo, pid: child.pid, logFile });
}

// The URL clients get for the launcher: FerretDB v1 has no retryable writes.
const launcherUrl = (port) => `mongodb://${HOST}:${port}/?retryWrites=false`;

// The command line of a process, or null.
function processArgs(pid) {
  try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean); } catch { return null; }
}

// The launcher's generation (launcherGeneration in scripts/ferretdb/main.go).
function launcherGeneration() {
  const m = /^const launcherGeneration = (\d+)$/m.exec(fs.readFileSync(path.join(FERRETDB_SRC, 'main.go'), 'utf8'));
  return m ? Number(m[1]) : 0;
}

// Where the server on the launcher's port stands: 'mongod' (a real MongoDB), 'current' (the
// launcher of these sources), 'other' (a launcher of other sources to leave be: a newer or
// equal generation built in another checkout), 'stale' (a FerretDB to replace: without the
// front, an older generation, or other sources built in this checkout; { pid } if infra started
// it (a ferretdb-launcher process), else { pid: null }), or null when nothing answers.
async function mongoServerState(port = PORTS.mongo, root = DEFAULT_ROOT) {
  const info = await probeBuildInfo(port);
  if (!info) return (await probeMongo(port)) ? { state: 'mongod' } : null; // answers hello but not buildInfo: leave it be
  if (info.ferretdbVersion === undefined) return { state: 'mongod', info };
  if (info.feedsLauncher === ferretdbLauncherSources()) return { state: 'current', info };
  const pid = listenerPid(port);
  const args = pid ? processArgs(pid) : null;
  const ours = args !== null && path.basename(args[0] ?? '') === LAUNCHER_NAME;
  const generation = typeof info.feedsLauncherGeneration === 'number' ? info.feedsLauncherGeneration : 0;
  const builtHere = ours && path.resolve(args[0]) === path.join(root, '.cache', 'ferretdb', LAUNCHER_NAME);
  if (info.feedsLauncher && generation >= launcherGeneration() && !builtHere) return { state: 'other', info, args };
  return { state: 'stale', info, pid: ours ? pid : null, args };
}

/**
 * If the FerretDB on `port` is stale (see mongoServerState), replaces it with the current
 * launcher (or throws for a foreign one); returns the server's state afterwards. One caller
 * replaces it; the others wait for the lock and then find the current launcher.
 */
export async function ensureCurrentLauncher({ port = PORTS.mongo, root = DEFAULT_ROOT, log = defaultLog } = {}) {
  const st = await mongoServerState(port, root);
  if (st?.state === 'other') {
    log(`ferretdb: port ${port} answers with a launcher of other sources, generation ${st.info.feedsLauncherGeneration} (${st.args?.[0] ?? 'not started here'}); using it`);
  }
  if (st?.state !== 'stale') return st;
  const lock = path.join(root, '.cache', 'locks', port === PORTS.mongo ? 'ferretdb.lock' : `ferretdb-${port}.lock`);
  await withLock(lock, { log, what: 'the FerretDB launcher' }, () => replaceStaleLauncher({ root, log, port }));
  return mongoServerState(port, root);
}

// Replaces a stale launcher on `port` with the current one: builds first (the outage lasts
// only the stop and the start), SIGTERM, SIGKILL after 15 s.
async function replaceStaleLauncher({ root, log, port }) {
  const st = await mongoServerState(port, root);
  if (!st || st.state !== 'stale') return;
  const what = st.info.feedsLauncher
    ? `a FerretDB launcher of other sources (${st.info.feedsLauncher.slice(0, 12)}, generation ${st.info.feedsLauncherGeneration ?? 0})`
    : `FerretDB ${st.info.ferretdbVersion} without the launcher's front`;
  if (!st.pid) {
    throw new Error(`port ${port} answers with ${what}, which infra did not start (no ${LAUNCHER_NAME} process listens there${st.args ? `: ${st.args.join(' ')}` : ''}). `
      + 'The services need the launcher\'s front (atomic read-then-write commands, TTL indexes): stop that server, then run `node scripts/infra.mjs`.');
  }
  await buildFerretdbLauncher({ root, log });
  log(`ferretdb: replacing ${what}, pid ${st.pid} (${st.args.join(' ')})`);
  try { process.kill(st.pid, 'SIGTERM'); } catch { /* already gone */ }
  const deadline = Date.now() + 15_000;
  while ((pidAlive(st.pid) || (await portOpen(port))) && Date.now() < deadline) await sleep(100);
  if (pidAlive(st.pid)) {
    try { process.kill(st.pid, 'SIGKILL'); } catch { /* gone */ }
    await waitFor(async () => !pidAlive(st.pid) && !(await portOpen(port)), { what: `pid ${st.pid} to exit`, timeoutMs: 10_000 });
  }
  await startFerretdb({ root, log, port });
  log('ferretdb: replaced');
}

async function startFerretdb({ root, log, port = PORTS.mongo }) {
  const bin = await buildFerretdbLauncher({ root, log });
  const logFile = path.join(root, '.cache', 'ferretdb', port === PORTS.mongo ? 'ferretdb.log' : `ferretdb-${port}.log`);
  const args = ['-listen', `${HOST}:${port}`, '-sqlite-dir', path.join(root, '.cache', 'ferretdb', 'sqlite')];
  log(`starting FerretDB (log ${path.relative(root, logFile)})`);
  const child = spawnDetached(bin, args, logFile, { cwd: root });
  await waitFor(() => probeMongo(port), { what: 'FerretDB', child, logFile, timeoutMs: 120_000 });
  child.unref();
  recordStarted({ root, name: 'ferretdb', what: 'FerretDB launcher', port, pid: child.pid, logFile });
}

async function startNats({ root, log }) {
  const bin = need('nats-server', 'apt-get install nats-server, or set NATS_URL');
  const storeDir = path.join(root, '.cache', 'nats');
  const logFile = path.join(root, '.cache', 'nats.log');
  fs.mkdirSync(storeDir, { recursive: true });
  const child = spawnDetached(bin, ['-js', '-a', HOST, '-p', String(PORTS.nats), '-sd', storeDir], logFile, { cwd: root });
  await waitFor(() => probeNats(PORTS.nats), { what: 'nats-server', child, logFile, timeoutMs: 30_000 });
  child.unref();
  recordStarted({ root, name: 'nats', what: 'nats-server', port: PORTS.nats, pid: child.pid, logFile });
}

async function startRedis({ root, log }) {
  const bin = need('redis-server', 'apt-get install redis-server, or set REDIS_URL');
  const dir = path.join(root, '.cache', 'redis');
  const logFile = path.join(root, '.cache', 'redis.log');
  const pidfile = path.join(dir, 'redis.pid');
  fs.mkdirSync(dir, { recursive: true });
  // --daemonize: redis forks and the command returns at once (the daemon's pid goes to the
  // pidfile); --save "": nothing on disk.
  const r = spawnSync(bin, ['--bind', HOST, '--port', String(PORTS.redis), '--save', '', '--appendonly', 'no', '--daemonize', 'yes', '--pidfile', pidfile, '--dir', dir, '--logfile', logFile], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`redis-server failed (exit ${r.status}): ${r.stderr || r.stdout}${tail(logFile)}`);
  await waitFor(() => probeRedis(PORTS.redis), { what: 'redis-server', logFile, timeoutMs: 30_000 });
  await waitFor(async () => fs.existsSync(pidfile), { what: `redis-server's pidfile ${pidfile}`, logFile, timeoutMs: 10_000 });
  recordStarted({ root, name: 'redis', what: 'redis-server', port: PORTS.redis, pidfile, logFile });
}

/**
 * Ensures MongoDB wire, NATS (JetStream) and Redis answer; returns their URLs, and `servers`:
 * for each server on loopback (none for a *_URL given), whether this checkout's set-up started
 * it, now or earlier (it is left running; `npm run stop-infra` stops it), or found it running.
 * @param {{ root?: string, log?: (msg: string) => void }} [opts]
 * @returns {Promise<{ mongoUrl: string, natsUrl: string, redisUrl: string, servers: Array<{ name: string, what: string, port: number, pid: number | null, started: 'now' | 'earlier' | 'no' }> }>}
 */
export async function ensureInfra({ root = DEFAULT_ROOT, log = defaultLog } = {}) {
  const since = Date.now();
  const tasks = [];
  const local = [];
  let mongoUrl = process.env.MONGO_URL;
  let natsUrl = process.env.NATS_URL;
  let redisUrl = process.env.REDIS_URL;

  if (!mongoUrl) {
    const useMongod = which('mongod') !== null;
    tasks.push(ensureService({
      name: useMongod ? 'mongod' : 'ferretdb', root, log,
      probe: () => probeMongo(PORTS.mongo),
      start: () => (useMongod ? startMongod({ root, log }) : startFerretdb({ root, log })),
    }).then(async () => {
      const st = await ensureCurrentLauncher({ root, log });
      mongoUrl = st?.state === 'current' || st?.state === 'other' ? launcherUrl(PORTS.mongo) : `mongodb://${HOST}:${PORTS.mongo}`;
      local.push({ name: 'mongo', what: st?.state === 'mongod' ? 'mongod' : 'FerretDB launcher', port: PORTS.mongo });
    }));
  }
  if (!natsUrl) {
    natsUrl = `nats://${HOST}:${PORTS.nats}`;
    local.push({ name: 'nats', what: 'nats-server', port: PORTS.nats });
    tasks.push(ensureService({ name: 'nats', root, log, probe: async () => (await probeNats(PORTS.nats)) !== null, start: () => startNats({ root, log }) })
      .then(async () => {
        const info = await probeNats(PORTS.nats);
        if (info && !info.jetstream) log(`nats: WARNING the server on ${PORTS.nats} runs without JetStream (start it with -js)`);
      }));
  }
  if (!redisUrl) {
    redisUrl = `redis://${HOST}:${PORTS.redis}`;
    local.push({ name: 'redis', what: 'redis-server', port: PORTS.redis });
    tasks.push(ensureService({ name: 'redis', root, log, probe: () => probeRedis(PORTS.redis), start: () => startRedis({ root, log }) }));
  }

  const results = await Promise.allSettled(tasks);
  const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
  if (failed.length) throw failed.length === 1 ? failed[0] : new AggregateError(failed, failed.map((e) => e.message).join('\n'));
  const servers = serverStatus(root, local.sort((a, b) => a.port - b.port), since);
  return { mongoUrl, natsUrl, redisUrl, servers };
}

// ---------------------------------------------------------------------------------------------
// Private instances for fault tests: foreground children of this process (killed when it exits),
// each on its own port, stoppable and restartable with the same data.

// Under TEST_INFRA=containers: the private container of that kind, else null (a local process).
async function privateContainer(kind, port) {
  const containers = await import('./lib/containers.mjs');
  return containers.testInfraMode() === 'containers' ? containers.startPrivateContainer(kind, { port }) : null;
}

const privateChildren = new Set();
process.on('exit', () => { for (const c of privateChildren) { try { c.kill('SIGKILL'); } catch { /* gone */ } } });

// Ports handed out for a child to listen on later. A port the OS picks for `listen(0)` comes from
// the ephemeral range (32768-60999 on Linux), the range every outgoing connection takes its local
// port from too: between our probe and the child's listen, a busy test run's connection could take
// it (a worker died with EADDRINUSE so, once in CI). So the ports come from below that range,
// chosen at random, each probed free, never handed out twice by one process; the servers' fixed
// ports are skipped.
const PORT_RANGE = [15000, 32000];
const FIXED_PORTS = new Set([4222, 6222, 8222, 5432, 6379, 27017, 27018, 27019]);
const handedOut = new Set();

function listenable(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(null));
    srv.listen(port, HOST, () => { const got = srv.address().port; srv.close(() => resolve(got)); });
  });
}

/** A free loopback TCP port for a child process to listen on (see above). */
export async function freePort() {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = PORT_RANGE[0] + Math.floor(Math.random() * (PORT_RANGE[1] - PORT_RANGE[0]));
    if (FIXED_PORTS.has(port) || handedOut.has(port)) continue;
    if ((await listenable(port)) === null) continue;
    handedOut.add(port);
    return port;
  }
  // The range is crowded: what the OS picks.
  const port = await listenable(0);
  if (port === null) throw new Error('no free loopback port');
  return port;
}

function privateServer({ name, port, url, command, args, ready, logFile, env }) {
  let child = null;
  let exitPromise = null;
  const handle = {
    url,
    port,
    get pid() { return child?.pid ?? null; },
    get running() { return child !== null; },
    /** Starts the server (again) on the same port with the same data; waits until it answers. */
    async start() {
      if (child) return handle;
      if (await portOpen(port)) throw new Error(`${name}: port ${port} is already in use`);
      fs.mkdirSync(path.dirname(logFile), { recursive: true });
      const fd = fs.openSync(logFile, 'a');
      let c;
      try {
        c = spawn(command, args, { stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
      } finally {
        fs.closeSync(fd);
      }
      child = c;
      privateChildren.add(c);
      exitPromise = new Promise((resolve) => c.once('exit', () => { privateChildren.delete(c); if (child === c) child = null; resolve(); }));
      try {
        await waitFor(ready, { what: `${name} on port ${port}`, child: c, logFile, timeoutMs: 120_000 });
      } catch (e) {
        c.kill('SIGKILL');
        await exitPromise;
        throw e;
      }
      return handle;
    },
    /**
     * Kills the server (SIGKILL by default: a crash; pass { signal: 'SIGTERM' } for a clean
     * shutdown) and waits until its process is gone and the port refuses connections.
     */
    async stop({ signal = 'SIGKILL', timeoutMs = 20_000 } = {}) {
      if (!child) return;
      const c = child;
      c.kill(signal);
      const t = setTimeout(() => c.kill('SIGKILL'), timeoutMs);
      await exitPromise;
      clearTimeout(t);
      await waitFor(async () => !(await portOpen(port)), { what: `${name} port ${port} to close`, timeoutMs });
    },
  };
  return handle.start();
}

/**
 * A private redis-server on loopback. Data persists in `dir` (append-only file, fsync always),
 * so stop() + start() keeps it even after a SIGKILL.
 */
export async function startPrivateRedis({ port, dir, root = DEFAULT_ROOT } = {}) {
  const contained = await privateContainer('redis', port);
  if (contained) return contained;
  port ??= await freePort();
  dir = path.resolve(dir ?? path.join(root, '.cache', 'private', `redis-${port}`));
  fs.mkdirSync(dir, { recursive: true });
  return privateServer({
    name: 'redis-server', port, url: `redis://${HOST}:${port}`,
    command: need('redis-server', 'apt-get install redis-server'),
    args: ['--bind', HOST, '--port', String(port), '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--daemonize', 'no'],
    ready: () => probeRedis(port), logFile: path.join(dir, 'redis.log'),
  });
}

/**
 * A private Redis Cluster on loopback: `masters` redis-servers (default 3) in cluster mode on free
 * ports, no replicas, nothing on disk but each node's cluster config (in a fresh folder under
 * .cache/private/), joined by `redis-cli --cluster create`; resolves once every node reports
 * cluster_state:ok. Its url is redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,... (kit's REDIS_URL
 * form). stop() stops every node and removes the folder. Needs Debian's redis-server and
 * redis-cli, also under TEST_INFRA=containers.
 */
export async function startRedisCluster({ masters = 3, root = DEFAULT_ROOT } = {}) {
  const server = need('redis-server', 'apt-get install redis-server');
  const cli = need('redis-cli', 'apt-get install redis-tools');
  const ports = [];
  while (ports.length < masters) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const base = path.join(root, '.cache', 'private', `redis-cluster-${ports[0]}`);
  fs.rmSync(base, { recursive: true, force: true });
  const nodes = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop({ signal: 'SIGTERM' })));
    fs.rmSync(base, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const dir = path.join(base, String(port));
      fs.mkdirSync(dir, { recursive: true });
      nodes.push(await privateServer({
        name: 'redis-server (cluster)', port, url: `redis://${HOST}:${port}`,
        command: server,
        args: ['--bind', HOST, '--port', String(port), '--dir', dir, '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
          '--cluster-node-timeout', '5000', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
        ready: () => probeRedis(port), logFile: path.join(dir, 'redis.log'),
      }));
    }
    const created = spawnSync(cli, ['--cluster', 'create', ...ports.map((p) => `${HOST}:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 60_000 });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed (exit ${created.status}): ${created.stderr || created.stdout}`);
    const clusterOk = (port) => /cluster_state:ok/.test(spawnSync(cli, ['-h', HOST, '-p', String(port), 'cluster', 'info'], { encoding: 'utf8', timeout: 5_000 }).stdout ?? '');
    await waitFor(() => ports.every(clusterOk), { what: `Redis Cluster on ports ${ports.join(', ')}`, timeoutMs: 60_000 });
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
  return { url: `redis+cluster://${ports.map((p) => `${HOST}:${p}`).join(',')}`, ports, nodes, stop };
}

/** A private nats-server with JetStream on loopback; streams persist in `storeDir`. */
export async function startPrivateNats({ port, storeDir, root = DEFAULT_ROOT } = {}) {
  const contained = await privateContainer('nats', port);
  if (contained) return contained;
  port ??= await freePort();
  storeDir = path.resolve(storeDir ?? path.join(root, '.cache', 'private', `nats-${port}`));
  fs.mkdirSync(storeDir, { recursive: true });
  return privateServer({
    name: 'nats-server', port, url: `nats://${HOST}:${port}`,
    command: need('nats-server', 'apt-get install nats-server'),
    args: ['-js', '-a', HOST, '-p', String(port), '-sd', storeDir],
    ready: async () => (await probeNats(port)) !== null, logFile: path.join(storeDir, 'nats-server.log'),
  });
}

/**
 * A private NATS cluster of `size` servers with JetStream on loopback (always local processes:
 * nats-server must be installed, also under TEST_INFRA=containers). Each node has a client port,
 * a route port and a monitoring port of its own, and server name `<clusterName>-<i>` (how
 * JetStream names a stream's leader); every node routes to every other. Resolves once every node
 * answers and JetStream has a meta leader. Returns { urls, url (all client URLs comma-separated,
 * as NATS_URL takes them), nodes: [{ name, url, port, pid, running, stop(), start() }],
 * node(name), metaLeader(), stop() } where stop() ends every node and removes their stores.
 */
export async function startNatsCluster({ size = 3, clusterName = 'feeds-test', dir, root = DEFAULT_ROOT } = {}) {
  const command = need('nats-server', 'apt-get install nats-server');
  const ports = [];
  for (let i = 0; i < size; i++) ports.push({ client: await freePort(), route: await freePort(), monitor: await freePort() });
  dir = path.resolve(dir ?? path.join(root, '.cache', 'private', `nats-cluster-${ports[0].client}`));
  const routes = ports.map((p) => `nats://${HOST}:${p.route}`).join(',');
  const jsz = async (monitor) => {
    try {
      const res = await fetch(`http://${HOST}:${monitor}/jsz`, { signal: AbortSignal.timeout(1000) });
      return res.ok ? await res.json() : null;
    } catch { return null; }
  };
  const metaLeader = async () => {
    for (const p of ports) {
      const leader = (await jsz(p.monitor))?.meta_cluster?.leader;
      if (leader) return leader;
    }
    return null;
  };
  const nodes = await Promise.all(ports.map(async (p, i) => {
    const name = `${clusterName}-${i}`;
    const storeDir = path.join(dir, name);
    fs.mkdirSync(storeDir, { recursive: true });
    const handle = await privateServer({
      name: `nats-server ${name}`, port: p.client, url: `nats://${HOST}:${p.client}`, command,
      args: ['-js', '-a', HOST, '-p', String(p.client), '-m', String(p.monitor), '-n', name, '-sd', storeDir,
        '--cluster_name', clusterName, '--cluster', `nats://${HOST}:${p.route}`, '--routes', routes],
      ready: async () => (await probeNats(p.client)) !== null, logFile: path.join(storeDir, 'nats-server.log'),
    });
    return Object.assign(handle, { name });
  }));
  const cluster = {
    urls: nodes.map((n) => n.url),
    url: nodes.map((n) => n.url).join(','),
    nodes,
    node: (name) => nodes.find((n) => n.name === name),
    metaLeader,
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitFor(metaLeader, { what: `a JetStream meta leader in the ${size}-node NATS cluster`, timeoutMs: 60_000 });
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}

/**
 * A private FerretDB on loopback. Backend as the shared one (PostgreSQL database feeds_ferretdb
 * when PostgreSQL answers: use distinct MongoDB database names per test), else SQLite in `dir`.
 * Options: backend ('auto' | 'postgresql' | 'sqlite'), gin (companion GIN indexes, default
 * true), postgresqlUrl, logLevel, ttlPeriod (the launcher's -ttl-period, e.g. '1s'), args (more
 * launcher flags). Its url is mongodb://127.0.0.1:<port>/?retryWrites=false.
 * Under TEST_INFRA=containers a MongoDB 7 container instead, the
 * storage the rest of that run uses, unless a backend is asked for by name (FerretDB is wanted).
 */
export async function startPrivateFerretdb({ port, dir, backend = 'auto', gin = true, postgresqlUrl, logLevel = 'warn', ttlPeriod, args: extraArgs = [], root = DEFAULT_ROOT, log = defaultLog } = {}) {
  const contained = backend === 'auto' ? await privateContainer('mongo', port) : null;
  if (contained) return contained;
  port ??= await freePort();
  dir = path.resolve(dir ?? path.join(root, '.cache', 'private', `ferretdb-${port}`));
  fs.mkdirSync(dir, { recursive: true });
  const bin = await buildFerretdbLauncher({ root, log });
  const args = ['-listen', `${HOST}:${port}`, '-backend', backend, '-sqlite-dir', path.join(dir, 'sqlite'), `-gin=${gin}`, '-log-level', logLevel];
  if (postgresqlUrl) args.push('-postgresql-url', postgresqlUrl);
  if (ttlPeriod) args.push('-ttl-period', ttlPeriod);
  args.push(...extraArgs);
  return privateServer({
    name: 'ferretdb', port, url: launcherUrl(port),
    command: bin, args, ready: () => probeMongo(port), logFile: path.join(dir, 'ferretdb.log'),
  });
}

// ---------------------------------------------------------------------------------------------
// CLI

const isMain = (() => {
  try { return fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url)); } catch { return false; }
})();
if (isMain) {
  try {
    const urls = await ensureInfra({});
    process.stdout.write(`${JSON.stringify(urls)}\n`);
  } catch (e) {
    process.stderr.write(`[infra] ${e.stack || e}\n`);
    process.exitCode = 1;
  }
}
