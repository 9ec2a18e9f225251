import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, probeRedis } from "../../scripts/infra.mjs";
import {
  describeServers,
  processStamp,
  recordStarted,
  serverStatus,
  startedServers,
  stopStartedServers,
} from "../../scripts/lib/started-servers.mjs";

// What `npm start` reports and `npm run stop-infra` stops (scripts/lib/started-servers.mjs): only
// the servers set-up recorded as started, each by its pid (a daemon's from its pidfile), and never
// a process that merely holds a recorded pid now or listens on a recorded port. Run on throw-away
// processes and a private redis-server, in a root of their own: the shared servers are not touched.

const roots: string[] = [];
const newRoot = () => {
  const r = mkdtempSync(join(tmpdir(), "feeds-started-"));
  roots.push(r);
  return r;
};
const spawned: number[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alive = (pid: number) => processStamp(pid) !== null;

/** A detached node process listening on `port` (a stand-in server), as infra starts servers. */
async function standIn(port: number) {
  const child = spawn(process.execPath, ["-e", `require("node:net").createServer().listen(${port}, "127.0.0.1")`], { detached: true, stdio: "ignore" });
  child.unref();
  const pid = child.pid as number;
  spawned.push(pid);
  for (let i = 0; i < 100 && !(await listening(port)); i++) await sleep(50);
  return pid;
}
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(true));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(false)));
  });

afterAll(() => {
  for (const pid of spawned) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* stopped by the test */
    }
  }
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

describe("servers set-up started", () => {
  it("are reported as started now, earlier or not by this checkout, by the listener's pid", async () => {
    const root = newRoot();
    const [ours, theirs] = [await freePort(), await freePort()];
    const pid = await standIn(ours);
    const other = await standIn(theirs);
    const since = Date.now();
    recordStarted({ root, name: "nats", what: "nats-server", port: ours, pid });
    const servers = [
      { name: "nats", what: "nats-server", port: ours },
      { name: "redis", what: "redis-server", port: theirs },
    ];
    const now = serverStatus(root, servers, since);
    expect(now).toEqual([
      { name: "nats", what: "nats-server", port: ours, pid, started: "now" },
      { name: "redis", what: "redis-server", port: theirs, pid: other, started: "no" },
    ]);
    expect(serverStatus(root, servers, Date.now() + 1000)[0]?.started).toBe("earlier");
    const lines = describeServers(now);
    expect(lines[0]).toContain("npm run stop-infra");
    expect(lines[1]).toContain("not started by this checkout");
  });

  it("stop-infra stops exactly the recorded ones, and forgets a record whose pid is another process now", async () => {
    const root = newRoot();
    const recorded = await standIn(await freePort());
    const unrecorded = await standIn(await freePort());
    const reused = await standIn(await freePort());
    recordStarted({ root, name: "mongod", what: "mongod", port: 1, pid: recorded });
    recordStarted({ root, name: "nats", what: "nats-server", port: 2, pid: reused });
    // As if that process had ended and the kernel had given its pid to another one.
    const file = join(root, ".cache", "infra", "nats-2.json");
    writeFileSync(file, readFileSync(file, "utf8").replace(/"stamp": "[^"]+"/, '"stamp": "start:1"'));

    expect(startedServers(root).map((r) => r.pid)).toEqual([recorded]);
    const stopped = await stopStartedServers(root, { graceMs: 5_000 });
    expect(stopped.map((r) => r.pid)).toEqual([recorded]);
    expect(alive(recorded)).toBe(false);
    expect(alive(unrecorded)).toBe(true);
    expect(alive(reused)).toBe(true);
    expect(startedServers(root)).toEqual([]);
    expect(await stopStartedServers(root)).toEqual([]);
  });

  it("a daemonised redis-server is recorded from its pidfile and stopped by that pid", async () => {
    const root = newRoot();
    const port = await freePort();
    const pidfile = join(root, "redis.pid");
    const r = spawnSync("redis-server", ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--daemonize", "yes", "--pidfile", pidfile, "--dir", root, "--logfile", join(root, "redis.log")]);
    expect(r.status).toBe(0);
    for (let i = 0; i < 100 && !(await probeRedis(port)); i++) await sleep(50);
    for (let i = 0; i < 100 && !(await readPid(pidfile)); i++) await sleep(50);
    const record = recordStarted({ root, name: "redis", what: "redis-server", port, pidfile });
    spawned.push(record.pid);
    expect(record.pid).toBe(await readPid(pidfile));
    expect(record.pid).not.toBe(r.pid); // the daemon, not the command that forked it
    expect(serverStatus(root, [{ name: "redis", what: "redis-server", port }], Date.now() + 1000)[0]?.started).toBe("earlier");

    await stopStartedServers(root);
    expect(alive(record.pid)).toBe(false);
    expect(await probeRedis(port)).toBe(false);
  });
});

async function readPid(file: string): Promise<number | null> {
  try {
    const n = Number.parseInt(readFileSync(file, "utf8"), 10);
    return Number.isInteger(n) ? n : null;
  } catch {
    return null;
  }
}
