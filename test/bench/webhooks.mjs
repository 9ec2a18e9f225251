// Webhook deliveries per second to a local receiver, beside a plain fetch (undici) POST loop to
// the same receiver. Standalone for now (`node test/bench/webhooks.mjs [events]`, after `tsc -b`,
// with MongoDB-wire storage, NATS and Redis on their default loopback ports); `npm run bench`
// takes it in later.
//
// The system runs in one process in a namespace of its own with one tenant and one destination.
// N events are published straight onto the notify queue (as producers do); the figure is N over
// the time from the first publish to the receiver's N-th verified-size delivery, so it covers the
// notify worker (records, delivery tasks) and the delivery worker (sign, POST, record update).
import { createServer } from "node:http";
import { randomBytes } from "node:crypto";
import { startSystem } from "../../scripts/lib/system.mjs";
import { ensureInfra } from "../../scripts/infra.mjs";
import { connectNats, newEvent, publishEvents } from "../../kit/dist/index.js";
import { api, dropNamespaceSafely, serverToken } from "./lib.mjs";

const N = Number(process.argv[2] ?? 3000);
const PARALLEL = 8; // the delivery worker's attempts in flight per destination

const received = { n: 0, at: 0 };
const receiver = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    received.n++;
    received.at = Date.now();
    res.writeHead(204).end();
  });
});
await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
const target = `http://127.0.0.1:${receiver.address().port}/hook`;
const body = JSON.stringify({ id: randomBytes(16).toString("hex"), type: "webhook.test", created_at: new Date().toISOString(), tenant_id: "t", data: { message: "x".repeat(200) } });

async function fetchLoop(loops) {
  received.n = 0;
  const per = Math.ceil(N / loops);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      for (let i = 0; i < per; i++) {
        const r = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
        await r.arrayBuffer();
      }
    }),
  );
  return (per * loops) / ((performance.now() - t0) / 1000);
}

const infra = await ensureInfra({ log: () => undefined });
const namespace = `bench_wh_${Date.now().toString(36)}`;
const staff = { email: "staff@bench-wh.test", password: randomBytes(12).toString("base64url") };
const system = await startSystem({
  env: {
    MONGO_URL: infra.mongoUrl,
    NATS_URL: infra.natsUrl,
    REDIS_URL: infra.redisUrl,
    FEEDS_NAMESPACE: namespace,
    FEEDS_MASTER_KEY: randomBytes(32).toString("base64"),
    BOOTSTRAP_STAFF_EMAIL: staff.email,
    BOOTSTRAP_STAFF_PASSWORD: staff.password,
    WEBHOOK_ALLOW_PRIVATE: "1",
    LOG_LEVEL: "warn",
  },
});
try {
  const fetch1 = await fetchLoop(1);
  const fetchP = await fetchLoop(PARALLEL);

  const login = await api(system.url, "POST", "/operator/login", { body: staff });
  const created = await api(system.url, "POST", "/admin/tenants", { token: login.token, body: { name: "bench" } });
  const token = await serverToken(created.tenant.api_key, created.api_secret);
  await api(system.url, "POST", "/v1/webhooks", { token, body: { url: target } });

  const nats = await connectNats({ NATS_URL: infra.natsUrl, FEEDS_NAMESPACE: namespace }, "bench");
  received.n = 0;
  const tenantId = created.tenant.id;
  const t0 = performance.now();
  const events = Array.from({ length: N }, () => newEvent("webhook.test", tenantId, { message: "x".repeat(200) }));
  for (let i = 0; i < events.length; i += 200) await publishEvents(nats, events.slice(i, i + 200));
  const published = performance.now();
  while (received.n < N) {
    if (performance.now() - t0 > 300_000) throw new Error(`only ${received.n} of ${N} delivered in 300 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (received.at - (Date.now() - performance.now() + t0)) / 1000;
  const webhooks = N / seconds;
  await nats.close();
  const row = (name, v) => `${name.padEnd(48)} ${Math.round(v).toString().padStart(7)} /s`;
  console.log(`events: ${N} (published in ${Math.round(published - t0)} ms)`);
  console.log(row("fetch POST loop, 1 at a time", fetch1));
  console.log(row(`fetch POST loops, ${PARALLEL} at a time`, fetchP));
  console.log(row("webhook deliveries (publish to last delivery)", webhooks));
  console.log(`ratio to ${PARALLEL} fetch loops: ${(webhooks / fetchP * 100).toFixed(1)}%; to 1 loop: ${(webhooks / fetch1 * 100).toFixed(1)}%`);
} finally {
  await system.stop();
  receiver.close();
  await dropNamespaceSafely(namespace, infra, () => undefined);
}
