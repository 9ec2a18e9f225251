// The servers the set-up (scripts/infra.mjs) started and left running, so that `npm start` can
// say which they are and `npm run stop-infra` can stop exactly those.
//
// One record per server under <root>/.cache/infra/<name>-<port>.json: its pid (for a daemon that
// forks, such as redis-server, the pid its pidfile names), the process's start stamp (Linux
// /proc/<pid>/stat start time, else `ps -o lstart=`), its executable's name and port. A record
// counts only while a process of that pid, stamp and executable runs: a pid the kernel handed to
// another process is never signalled. Nothing is ever looked up or stopped by name.
//
// Plain ESM on Node built-ins only, like infra.mjs, which imports it.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const recordsDir = (root) => path.join(root, '.cache', 'infra');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** What the process of `pid` is, as a string that changes when the pid is reused; null if none. */
export function processStamp(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields 3 (state) and 22 (starttime), counted after the parenthesised command, which may
    // hold spaces. A zombie has exited: only its exit status is left for its parent to collect.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : `start:${fields[19]}`;
  } catch {
    if (fs.existsSync('/proc/self/stat')) return null; // Linux, and no such process
    const r = spawnSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8' });
    return r.status === 0 && r.stdout.trim() ? `lstart:${r.stdout.trim()}` : null;
  }
}

/** The executable's file name of a running process (from its command line), or null. */
function executableOf(pid) {
  try {
    const argv0 = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
    return argv0 ? path.basename(argv0) : null;
  } catch {
    const r = spawnSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' });
    return r.status === 0 && r.stdout.trim() ? path.basename(r.stdout.trim()) : null;
  }
}

/** The pid of the process listening on loopback TCP `port`, from /proc (Linux), or null. */
export function listenerPid(port) {
  const inodes = new Set();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = fs.readFileSync(f, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '0A' && Number.parseInt(cols[1].split(':').pop(), 16) === port) inodes.add(cols[9]);
    }
  }
  if (!inodes.size) return null;
  let pids = [];
  try { pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)); } catch { return null; }
  for (const pid of pids) {
    let fds = [];
    try { fds = fs.readdirSync(`/proc/${pid}/fd`); } catch { continue; }
    for (const fd of fds) {
      let link = '';
      try { link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && inodes.has(m[1])) return Number(pid);
    }
  }
  return null;
}

const pidOfFile = (file) => {
  try { return Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10); } catch { return NaN; }
};

/**
 * Records that set-up started `what` (e.g. 'FerretDB launcher') as `name` on `port`: the process
 * `pid`, or for a daemon the pid its `pidfile` names.
 */
export function recordStarted({ root, name, what, port, pid, pidfile, logFile }) {
  const actual = pidfile ? pidOfFile(pidfile) : pid;
  const stamp = processStamp(actual);
  if (!stamp) throw new Error(`${what} on port ${port}: no process ${actual}${pidfile ? ` (pidfile ${pidfile})` : ''} to record`);
  const record = { name, what, port, pid: actual, stamp, executable: executableOf(actual), pidfile: pidfile ?? null, logFile: logFile ?? null, startedAt: Date.now() };
  fs.mkdirSync(recordsDir(root), { recursive: true });
  fs.writeFileSync(path.join(recordsDir(root), `${name}-${port}.json`), `${JSON.stringify(record, null, 2)}\n`);
  return record;
}

/** Whether the process a record names still runs: same pid, stamp and executable (and pidfile). */
function stillRuns(r) {
  if (processStamp(r.pid) !== r.stamp || executableOf(r.pid) !== r.executable) return false;
  return !r.pidfile || pidOfFile(r.pidfile) === r.pid;
}

/**
 * The servers this checkout's set-up started that still run, oldest first. Records of processes
 * that are gone (or whose pid now names another process) are deleted.
 */
export function startedServers(root) {
  let files = [];
  try { files = fs.readdirSync(recordsDir(root)).filter((f) => f.endsWith('.json')); } catch { return []; }
  const live = [];
  for (const f of files) {
    const file = path.join(recordsDir(root), f);
    let r;
    try { r = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { continue; }
    if (stillRuns(r)) live.push(r);
    else fs.rmSync(file, { force: true });
  }
  return live.sort((a, b) => a.startedAt - b.startedAt);
}

/**
 * Where each of `servers` ({ name, what, port }) stands: started by this checkout's set-up since
 * `since` ('now'), before it ('earlier'), or not by this checkout ('no', pid of the listener if
 * known); the port's listener must be the recorded process.
 */
export function serverStatus(root, servers, since = Date.now()) {
  const records = startedServers(root);
  return servers.map((s) => {
    const listener = listenerPid(s.port);
    const r = records.find((x) => x.port === s.port && x.pid === listener);
    if (!r) return { ...s, pid: listener, started: 'no' };
    return { ...s, what: r.what, pid: r.pid, started: r.startedAt >= since ? 'now' : 'earlier' };
  });
}

/** One line per server for the terminal: what runs, whose it is, what stops it. */
export function describeServers(statuses) {
  return statuses.map((s) => {
    const at = `${s.what} on 127.0.0.1:${s.port}`;
    if (s.started === 'no') return `${at}: was already running (${s.pid ? `pid ${s.pid}, ` : ''}not started by this checkout; left alone)`;
    return `${at}: started ${s.started === 'now' ? 'now' : 'earlier'} by this checkout (pid ${s.pid}); left running, \`npm run stop-infra\` stops it`;
  });
}

/**
 * Stops every server this checkout's set-up started (SIGTERM, SIGKILL after `graceMs`), each by
 * its recorded pid, and deletes its record; returns what it stopped. A server it did not start
 * is never touched.
 */
export async function stopStartedServers(root, { log = () => {}, graceMs = 15_000 } = {}) {
  const stopped = [];
  for (const r of startedServers(root)) {
    log(`stopping ${r.what} on port ${r.port} (pid ${r.pid}${r.pidfile ? `, pidfile ${r.pidfile}` : ''})`);
    try { process.kill(r.pid, 'SIGTERM'); } catch { /* gone meanwhile */ }
    const deadline = Date.now() + graceMs;
    while (processStamp(r.pid) === r.stamp && Date.now() < deadline) await sleep(100);
    if (processStamp(r.pid) === r.stamp) {
      log(`${r.what} (pid ${r.pid}) still runs after ${graceMs / 1000} s: SIGKILL`);
      try { process.kill(r.pid, 'SIGKILL'); } catch { /* gone */ }
      const killDeadline = Date.now() + 10_000;
      while (processStamp(r.pid) === r.stamp) {
        if (Date.now() > killDeadline) throw new Error(`${r.what} (pid ${r.pid}) survived SIGKILL for 10 s (not ours to signal?)`);
        await sleep(50);
      }
    }
    fs.rmSync(path.join(recordsDir(root), `${r.name}-${r.port}.json`), { force: true });
    stopped.push(r);
  }
  return stopped;
}
