// Follower seeding for the fan-out benches (7, and 13 below), and bench 13: one activity to a
// celebrity's 100,000 followers on a split system with two fan-out worker processes.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { MongoClient } from "mongodb";
import { connect } from "nats";
import { freePort } from "../../scripts/infra.mjs";
import { startSystem } from "../../scripts/lib/system.mjs";
import { MB, api, dropNamespaceSafely, namespaceHelpers, root, rssOf, serverToken, sleep, started, stopChild, systemEnv } from "./lib.mjs";
import { pool, range, until } from "./system.mjs";

/**
 * Stores `n` follow edges `timeline:f<i>` → `target` straight into the graph's collection, in the
 * shape the graph service writes them (follow-repository.ts): the batch route would take minutes
 * for 100,000 edges, and the fan-out reads only the edges. No follower counts or history copies.
 */
export async function seedFollowers(c, target, n, { batchSize = 1000, width = 2 } = {}) {
  const follows = c.db.collection("follows");
  const created_at = new Date();
  const t0 = performance.now();
  let stored = 0;
  await pool(Math.ceil(n / batchSize), width, async (b) => {
    const r = await follows.insertMany(
      range(b * batchSize, Math.min(n, (b + 1) * batchSize)).map((i) => ({
        _id: `${c.tenant.id}/timeline:f${i}/${target}`,
        tenant_id: c.tenant.id,
        source_feed: `timeline:f${i}`,
        target_feed: target,
        created_at,
      })),
      { ordered: false },
    );
    stored += r.insertedCount;
  });
  // Not countDocuments: on FerretDB v1 it reads every matching document.
  if (stored !== n) throw new Error(`seeding: ${stored} of ${n} follow edges stored`);
  return (performance.now() - t0) / 1000;
}

/** A feed service process with FEEDS_ROLE=worker beside a running split system: one more fan-out worker. */
async function startFanoutWorker(env, urls) {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, "services/feed/dist/main.js")], {
    cwd: root,
    env: { ...process.env, ...env, ...urls, GRPC_PORT: String(port), METRICS_PORT: "0", FEEDS_ROLE: "worker" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  child.once("exit", () => started.delete(child));
  const tail = [];
  child.stderr.on("data", (d) => tail.push(String(d)) > 40 && tail.shift());
  const first = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`second fan-out worker did not start in 60 s\n${tail.join("")}`)), 60_000);
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (!line.startsWith("{")) return;
      const msg = JSON.parse(line);
      if (msg.port === undefined) return;
      clearTimeout(timer);
      resolve(msg);
    });
    child.once("exit", (code) => reject(new Error(`second fan-out worker exited (${code})\n${tail.join("")}`)));
  });
  return { name: "fanout-worker-2", child, metrics: `http://127.0.0.1:${first.metrics}/metrics`, stop: () => stopChild(child) };
}

/** Fan-out tasks this process has finished (feeds_queue_tasks_total, queue fanout, outcome done). */
async function fanoutTasksDone(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  let n = 0;
  for (const l of text.split("\n")) {
    if (l.startsWith("feeds_queue_tasks_total{") && l.includes('queue="fanout"') && l.includes('outcome="done"')) n += Number(l.slice(l.lastIndexOf(" ") + 1));
  }
  return n;
}

/**
 * Bench 7, celebrity part: one activity to `followers` followers on a split system whose fan-out
 * runs in two worker processes (FEEDS_ROLE=worker; the feed process serves routes only). Reports
 * the seconds until the last follower feed has it, entries/s against insertMany of as many entries
 * in the same run, the fan-out tasks each worker finished, and the peak RSS of each process while
 * it ran (sampled every 100 ms: the follower set is streamed, never held).
 */
export async function runCelebrity({ infra, log, followers = 100_000, insertFloor }) {
  const { newNamespace } = await namespaceHelpers();
  const namespace = newNamespace("bench");
  const env = { ...systemEnv(infra, namespace), FEEDS_INTERNAL_KEY: randomBytes(32).toString("base64") };
  let system;
  let second;
  let mongo;
  let nc;
  try {
    log(`bench 7 (celebrity): starting a split system with two fan-out workers (namespace ${namespace}); load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    system = await startSystem({ env, split: true, workers: true });
    for (const p of system.processes) {
      started.add(p.child);
      p.child.once("exit", () => started.delete(p.child));
    }
    const { FEEDS_MASTER_KEY: _, FEEDS_WEBHOOK_KEY: __, ...workerEnv } = env;
    second = await startFanoutWorker(workerEnv, system.urls);
    const { token: staffToken } = await api(system.url, "POST", "/operator/login", { body: { email: env.BOOTSTRAP_STAFF_EMAIL, password: env.BOOTSTRAP_STAFF_PASSWORD } });
    const created = await api(system.url, "POST", "/admin/tenants", { token: staffToken, body: { name: "celebrity", rate_limit_per_minute: 10_000_000 } });
    const tenant = { id: created.tenant.id, token: await serverToken(created.tenant.api_key, created.api_secret) };
    mongo = new MongoClient(infra.mongoUrl, { serverSelectionTimeoutMS: 3000, maxPoolSize: 8, retryWrites: false });
    await mongo.connect();
    nc = await connect({ servers: infra.natsUrl });
    const jsm = await nc.jetstreamManager();
    const c = { url: system.url, namespace, tenant, db: mongo.db(namespace) };

    await api(c.url, "PUT", "/v1/users/celeb", { token: tenant.token, body: { custom: { name: "Celeb" } } });
    const seedS = await seedFollowers(c, "user:celeb", followers);
    log(`  set-up: ${followers} follow edges of user:celeb stored directly in ${seedS.toFixed(1)} s`);
    const floorBefore = await insertFloor(c, followers, "bench_entries_floor_c");
    log(`  floor (before): ${followers} entries in ${floorBefore.seconds.toFixed(2)} s = ${floorBefore.entriesPerS.toFixed(0)} entries/s`);

    const workers = [system.processes.find((p) => p.name === "fanout-worker"), second];
    const before = await Promise.all(workers.map((w) => fanoutTasksDone(system.metrics[w.name] ?? w.metrics)));
    const watched = system.processes.map((p) => ({ name: p.name, pid: p.child.pid })).concat([{ name: second.name, pid: second.child.pid }]);
    const peak = Object.fromEntries(watched.map((p) => [p.name, rssOf(p.pid)]));
    const sampler = setInterval(() => {
      for (const p of watched) peak[p.name] = Math.max(peak[p.name], rssOf(p.pid));
    }, 100);
    const la = loadavg()[0];
    const start = performance.now();
    let seconds;
    let posted;
    try {
      posted = await api(c.url, "POST", "/v1/feeds/user/celeb/activities", {
        token: tenant.token,
        body: { actor: "user:celeb", verb: "post", object: "note:1", custom: { text: "hello, everyone" } },
      });
      // Done when the work queue is empty (as bench 7), confirmed by one count of the entries.
      const entries = c.db.collection("feed_entries");
      let emptyAt = null;
      await until(
        "celebrity fan-out",
        async () => {
          const d = (await jsm.streams.info(`${namespace}_fanout`)).state.messages;
          if (d > 0) {
            emptyAt = null;
            return false;
          }
          emptyAt ??= (performance.now() - start) / 1000;
          const n = await entries.countDocuments({ tenant_id: tenant.id, activity_id: posted.id });
          if (n >= followers + 1) return true;
          emptyAt = null;
          log(`  queue empty but ${n} of ${followers + 1} entries; waiting`);
          await sleep(1000);
          return false;
        },
        { everyMs: 100, timeoutMs: 600_000 },
      );
      seconds = emptyAt;
    } finally {
      clearInterval(sampler);
    }
    const after = await Promise.all(workers.map((w) => fanoutTasksDone(system.metrics[w.name] ?? w.metrics)));
    const tasks = workers.map((w, i) => ({ worker: w.name, tasks: after[i] - before[i] }));
    const entriesPerS = followers / seconds;
    const dlq = (await jsm.streams.info(`${namespace}_fanout_dlq`)).state.messages;
    const mb = (b) => Math.round(b / MB);
    log(
      `  fan-out: the last of ${followers} follower feeds had it after ${seconds.toFixed(2)} s = ${entriesPerS.toFixed(0)} entries/s; ` +
        `tasks done: ${tasks.map((t) => `${t.worker} ${t.tasks}`).join(", ")}; ${dlq} dead-lettered; load average ${la.toFixed(2)}`,
    );
    log(`  peak RSS while it ran: ${watched.map((p) => `${p.name} ${mb(peak[p.name])} MB`).join(", ")}`);
    const floorAfter = await insertFloor(c, followers, "bench_entries_floor_d");
    log(`  floor (after): ${followers} entries in ${floorAfter.seconds.toFixed(2)} s = ${floorAfter.entriesPerS.toFixed(0)} entries/s`);
    const floorPerS = (floorBefore.entriesPerS + floorAfter.entriesPerS) / 2;
    return {
      namespace,
      loadAverage: la,
      followers,
      seconds,
      entriesPerS,
      tasks,
      deadLettered: dlq,
      peakRssMB: Object.fromEntries(watched.map((p) => [p.name, mb(peak[p.name])])),
      floor: { before: floorBefore, after: floorAfter, entriesPerS: floorPerS },
      ratio: entriesPerS / floorPerS,
    };
  } finally {
    await second?.stop().catch(() => undefined);
    await system?.stop();
    await mongo?.close().catch(() => undefined);
    await nc?.drain().catch(() => undefined);
    await dropNamespaceSafely(namespace, infra, log).catch((e) => log(`  ${e.message}`));
  }
}
