// Which overload signal of gateway/src/overload.ts keeps the most goodput at 1.5× capacity (issue
// 11 item 5), on bench 13's mix: one namespace seeded once, then for each variant a fresh
// one-process system on it with that variant's OVERLOAD_* settings: closed-loop capacity, then
// the open loop at 1.5× it. Not part of `npm run bench` (it takes minutes); run by hand:
//   node test/bench/shed-compare.mjs [--skip-build] [--variants=none,inflight128,...]
import { loadavg } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { log, setup } from "../../scripts/lib/setup.mjs";

const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
const infra = await setup({ skipBuild: process.argv.includes("--skip-build") });
const { startSystem } = await import("../../scripts/lib/system.mjs");
const { api, benchDir, cpuMeter, dropNamespaceSafely, namespaceHelpers, serverToken, systemEnv } = await import("./lib.mjs");
const { seedMixed } = await import("./mixed.mjs");
const { runLoad } = await import("./openloop.mjs");

const off = { OVERLOAD_MAX_LATENCY_MS: "0", OVERLOAD_MAX_IN_FLIGHT: "0", OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0" };
const variants = {
  none: off,
  defaults: {},
  latency500: { OVERLOAD_MAX_LATENCY_MS: "500" },
  inflight64: { ...off, OVERLOAD_MAX_IN_FLIGHT: "64" },
  inflight256: { ...off, OVERLOAD_MAX_IN_FLIGHT: "256" },
  inflight32: { ...off, OVERLOAD_MAX_IN_FLIGHT: "32" },
  inflight128: { ...off, OVERLOAD_MAX_IN_FLIGHT: "128" },
  loop50: { ...off, OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "50" },
  loop100: { ...off, OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "100" },
};
const chosen = (arg("variants") ?? "none,defaults,inflight128,loop50").split(",");
const users = 500;
const { newNamespace } = await namespaceHelpers();
const namespace = newNamespace("bench");
const env = systemEnv(infra, namespace);
const mongo = new MongoClient(infra.mongoUrl, { serverSelectionTimeoutMS: 3000, maxPoolSize: 4, retryWrites: false });
const out = [];
let system;
try {
  await mongo.connect();
  system = await startSystem({ env });
  const { token: staffToken } = await api(system.url, "POST", "/operator/login", { body: { email: env.BOOTSTRAP_STAFF_EMAIL, password: env.BOOTSTRAP_STAFF_PASSWORD } });
  const created = await api(system.url, "POST", "/admin/tenants", { token: staffToken, body: { name: "shed", rate_limit_per_minute: 10_000_000 } });
  const tenant = { id: created.tenant.id, apiKey: created.tenant.api_key, secret: created.api_secret, token: await serverToken(created.tenant.api_key, created.api_secret) };
  await seedMixed({ url: system.url, tenant, db: mongo.db(namespace) }, { users, follows: 10, seedPosts: 1000, log });
  await system.stop();
  system = undefined;
  const mix = { module: join(benchDir, "mixed-requests.mjs"), args: { apiKey: tenant.apiKey, secret: tenant.secret, users } };
  for (const name of chosen) {
    system = await startSystem({ env: { ...env, ...variants[name] } });
    const pid = system.processes.at(-1).child.pid;
    const cap = await runLoad({ url: system.url, mix, mode: "closed", connections: 64, durationS: 8, warmupS: 3 });
    const meter = cpuMeter([pid]);
    const la = loadavg()[0];
    const r = await runLoad({ url: system.url, mix, mode: "open", rate: 1.5 * cap.rps, durationS: 10 });
    const cpu = meter.end();
    const line = {
      variant: name,
      capacity: Math.round(cap.rps),
      offered: Math.round(r.rate),
      goodput: Math.round(r.goodput),
      ratio: Number((r.goodput / cap.rps).toFixed(3)),
      shed: r.shed,
      sent: r.sent,
      errors: r.errors,
      p50: Math.round(r.p50),
      p99: Math.round(r.p99),
      maxWaitMs: Math.round(r.maxAnswerMs),
      systemCores: Number(cpu.processCores[0].toFixed(2)),
      otherCores: Number(cpu.otherCores.toFixed(2)),
      loadAverage: Number(la.toFixed(2)),
    };
    log(JSON.stringify(line));
    out.push(line);
    await system.stop();
    system = undefined;
  }
} finally {
  await system?.stop();
  await mongo.close().catch(() => undefined);
  await dropNamespaceSafely(namespace, infra, log).catch((e) => log(e.message));
}
console.table(out);
process.exit(0);
