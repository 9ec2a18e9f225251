// Bench 13 of `npm run bench` (issue 11 item 5): a mixed load like the published feed benchmarks,
// open loop. One-process system, `users` users each following `follows` others (so each author
// has as many followers), `seedPosts` activities each imported with fan-out so that every
// timeline has a first page. The mix (mixed-requests.mjs): 10% POST an activity to the caller's
// own user feed, 90% GET the caller's timeline first page, each with that user's token.
//   burst     50 users react to one activity at once on the idle system: an ordinary burst,
//             none of it shed (target 0 answers 429).
//   capacity  closed loop, `connections` at once: the saturation throughput of the mix (2xx/s),
//             before the open-loop rounds; again 3 s after the last one (recovery, info).
//   25/50/75% open loop at that fraction of capacity: p50/p99/p99.9 from each request's
//             scheduled time (openloop.mjs).
//   150%      open loop at 1.5× capacity: goodput (2xx answered per second) against the capacity
//             (target ≥ 90%), requests shed (429 with Retry-After), the longest wait for any answer.
// RSS of the system's processes: after set-up (idle), and the peak sampled every 100 ms over the
// rounds.
import { loadavg } from "node:os";
import { join } from "node:path";
import { benchDir, cpuMeter, MB, rssOf, sleep, treeOf } from "./lib.mjs";
import { runLoad } from "./openloop.mjs";
import { batch, pool, range, until, userToken, withSystem } from "./system.mjs";

const FOLLOW_STRIDES = [1, 7, 13, 31, 59, 97, 101, 211, 307, 401, 149, 257];

/** Sum of VmRSS over the system's processes and their descendants, in MB. */
const systemRssMb = (system) => system.processes.flatMap((p) => (p.child.pid ? treeOf(p.child.pid) : [])).reduce((s, pid) => s + rssOf(pid), 0) / MB;

/**
 * The mix's data on a system `c` (withSystem's {url, tenant, db}): `users` users, each following
 * `follows` others, `seedPosts` activities imported with fan-out; then every timeline's first page
 * read once, so that the load starts from warm heads as a running system would.
 */
export async function seedMixed(c, { users, follows, seedPosts, log }) {
  if (follows > FOLLOW_STRIDES.length || Math.max(...FOLLOW_STRIDES.slice(0, follows)) >= users) throw new Error(`bench 13: at most ${FOLLOW_STRIDES.length} follows and more users than the strides`);
  const t0 = Date.now();
  for (let i = 0; i < users; i += 100) {
    await batch(c, "/v1/batch/users", "users", range(i, Math.min(users, i + 100)).map((k) => ({ id: `u${k}`, custom: { name: `User ${k}` } })));
  }
  // timeline:u{i} follows user:u{i+s} for each stride s: every user has exactly `follows`
  // followers and follows as many.
  const edges = range(users).flatMap((i) => FOLLOW_STRIDES.slice(0, follows).map((s) => ({ source: `timeline:u${i}`, target: `user:u${(i + s) % users}` })));
  await pool(Math.ceil(edges.length / 100), 4, (j) => batch(c, "/v1/batch/follows", "follows", edges.slice(j * 100, j * 100 + 100)));
  // Activities with fan-out, so that every timeline has a first page before the load.
  await pool(Math.ceil(seedPosts / 100), 2, (j) =>
    batch(
      c,
      "/v1/batch/activities",
      "activities",
      range(j * 100, Math.min(seedPosts, j * 100 + 100)).map((n) => ({
        feed: `user:u${n % users}`,
        activity: { actor: `user:u${n % users}`, verb: "post", object: `note:s${n}`, custom: { text: `seed ${n}` } },
      })),
    ),
  );
  const entries = c.db.collection("feed_entries");
  const want = seedPosts * (1 + follows);
  await until("seed fan-out", async () => (await entries.countDocuments({ tenant_id: c.tenant.id })) >= want, { everyMs: 500, timeoutMs: 180_000 });
  log(`  set-up: ${users} users, ${users * follows} follows, ${seedPosts} activities fanned out to ${want} entries (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  const tokens = await Promise.all(range(users).map((k) => userToken(c.tenant, `u${k}`)));
  // Cold reads on a busy machine may queue past the gateway's shedding limit: a 429 is retried
  // after its Retry-After, as a client would.
  await pool(users, 8, async (k) => {
    for (;;) {
      const res = await fetch(`${c.url}/v1/feeds/timeline/u${k}?limit=20`, { headers: { authorization: `Bearer ${tokens[k]}` } });
      await res.arrayBuffer();
      if (res.ok) return;
      if (res.status !== 429) throw new Error(`priming timeline:u${k}: ${res.status}`);
      await sleep(Number(res.headers.get("retry-after") ?? 1) * 1000);
    }
  });
}

/**
 * An ordinary burst: `n` users react at once to one activity on the idle system, as a popular
 * post gets liked. Counts the answers by kind and the longest: none should be shed.
 */
async function burstOnIdle(c, n) {
  const tokens = await Promise.all(range(n).map((k) => userToken(c.tenant, `u${k}`)));
  const page = await (await fetch(`${c.url}/v1/feeds/user/u0?limit=1`, { headers: { authorization: `Bearer ${tokens[0]}` } })).json();
  const id = page.results[0].id;
  const answers = await Promise.all(
    tokens.map(async (token) => {
      const t0 = performance.now();
      const res = await fetch(`${c.url}/v1/activities/${id}/reactions`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ kind: "like" }) });
      await res.arrayBuffer();
      return { status: res.status, ms: performance.now() - t0 };
    }),
  );
  const count = (f) => answers.filter(f).length;
  return { sent: n, created: count((a) => a.status === 201), shed: count((a) => a.status === 429), other: count((a) => a.status !== 201 && a.status !== 429), maxMs: Math.max(...answers.map((a) => a.ms)) };
}

export async function runMixedLoad({
  infra,
  log,
  users = 500,
  follows = 10,
  seedPosts = 1000,
  // As many as the gateway admits at once (OVERLOAD_MAX_IN_FLIGHT's default): the configured
  // system's saturation, none of it shed.
  connections = 32,
  capacityS = 8,
  roundS = 10,
  warmupS = 3,
  fractions = [0.25, 0.5, 0.75],
  overload = 1.5,
  env,
}) {
  return withSystem(
    infra,
    log,
    "bench 13",
    async (c) => {
      await seedMixed(c, { users, follows, seedPosts, log });
      await sleep(2000);
      const idleRssMb = systemRssMb(c.system);
      const burst = await burstOnIdle(c, 50);
      log(`  burst: ${burst.sent} concurrent reactions by as many users on the idle system: ${burst.created} 201, ${burst.shed} shed (429), ${burst.other} other; longest ${burst.maxMs.toFixed(0)} ms`);
      await sleep(1000);

      let peakRssMb = idleRssMb;
      const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, systemRssMb(c.system))), 100);
      const mix = { module: join(benchDir, "mixed-requests.mjs"), args: { apiKey: c.tenant.apiKey, secret: c.tenant.secret, users } };
      const phases = [];
      const phase = async (label, o) => {
        const meter = cpuMeter([c.gatewayPid]);
        const la = loadavg()[0];
        const r = await runLoad({ url: c.url, mix, timeoutMs: 15_000, ...o }, { name: `bench 13 ${label}` });
        const cpu = meter.end();
        const out = { label, ...r, systemCores: cpu.processCores[0], otherCores: cpu.otherCores, infraCores: cpu.infraCores, loadAverage: la };
        phases.push(out);
        const ms = (x) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : "—");
        log(
          `  ${label}: ${o.mode === "closed" ? `${r.rps.toFixed(0)} 2xx/s` : `${o.rate.toFixed(0)} req/s offered, goodput ${r.goodput.toFixed(0)}/s`}; ` +
            `p50 ${ms(r.p50)} / p99 ${ms(r.p99)} / p99.9 ${ms(r.p999)} / max ${ms(r.max)} ms (reads p99 ${ms(r.byName.read.p99)}, writes p99 ${ms(r.byName.write.p99)}); ` +
            `${r.sent} sent, ${r.ok} 2xx, ${r.shed} shed, ${r.other} other, ${r.errors} errors; longest wait ${ms(r.maxAnswerMs)} ms; ` +
            (r.sendLag ? `client: send lag p99 ${ms(r.sendLag.p99)} ms, ${r.clientQueued} queued at most, ` : "") +
            `${(r.loadGeneratorCores * 100).toFixed(0)}% core; system ${(cpu.processCores[0] * 100).toFixed(0)}% core, shared servers ${cpu.infraCores.toFixed(2)}, other work ${cpu.otherCores.toFixed(2)} cores; load avg ${la.toFixed(2)}`,
        );
        return out;
      };
      try {
        log(`  load: mix 10% POST activity / 90% GET timeline page 1, user tokens; capacity = closed loop, ${connections} connections, ${capacityS} s, before and after; open-loop rounds of ${roundS} s`);
        const before = await phase("capacity before", { mode: "closed", connections, durationS: capacityS, warmupS });
        const open = [];
        const capacity = before.rps;
        for (const f of fractions) open.push(await phase(`open ${f * 100}%`, { mode: "open", rate: f * capacity, durationS: roundS }));
        const over = await phase(`open ${overload * 100}%`, { mode: "open", rate: overload * capacity, durationS: roundS });
        // Let the overload's backlog (fan-out of its writes) drain before measuring again.
        await sleep(3000);
        // Recovery: the same closed loop again. The floor stays the capacity before: the one the
        // rates were fractions of (a system still recovering must not lower it).
        const after = await phase("capacity after", { mode: "closed", connections, durationS: capacityS });
        return {
          namespace: c.namespace,
          users,
          follows,
          seedPosts,
          capacity,
          before,
          after,
          open,
          over,
          overloadRatio: over.goodput / capacity,
          burst,
          idleRssMb,
          peakRssMb,
          phases,
        };
      } finally {
        clearInterval(sampler);
      }
    },
    { env },
  );
}
