// Bench 11 of `npm run bench`: webhook deliveries per second to a local receiver, beside an
// undici (fetch) POST loop to the same receiver.
//
// The receiver runs in a process of its own (webhook-receiver.mjs). The system runs in one
// process in a namespace of its own, with one tenant and one destination (the receiver). N
// `webhook.test` events are published straight onto the notify queue (as producers do); the
// figure is N over the time from the first publish to the receiver's N-th distinct webhook-id, so
// it covers the notify worker (records, delivery tasks) and the delivery worker (sign, POST,
// record update). Floors: N POSTs of a body of the same size by fetch (undici) from this process,
// one loop (the issue's "an undici POST loop"), and 16 loops at a time (the delivery worker's
// attempts in flight per destination), each before and after the deliveries (their mean).
//
//   node test/bench/webhooks.mjs [--skip-build] [--events=3000] [--cpu-prof]
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { api, benchDir, cpuMeter, sleep, startNode } from "./lib.mjs";
import { withSystem } from "./system.mjs";

/** The delivery worker's attempts in flight per destination (delivery-worker.ts DEFAULT_PER_DESTINATION). */
const PARALLEL = 16;

async function count(receiver) {
  return (await fetch(`${receiver}/count`)).json();
}

/** N POSTs to the receiver from `loops` fetch loops; answers POSTs per second. */
async function fetchLoop(receiver, n, loops) {
  await fetch(`${receiver}/reset`, { method: "POST" });
  const body = JSON.stringify({ id: randomBytes(16).toString("hex"), type: "webhook.test", created_at: new Date().toISOString(), tenant_id: "t", data: { message: "x".repeat(200) } });
  const per = Math.ceil(n / loops);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      for (let i = 0; i < per; i++) {
        const r = await fetch(`${receiver}/hook`, { method: "POST", headers: { "content-type": "application/json" }, body });
        await r.arrayBuffer();
      }
    }),
  );
  const perS = (per * loops) / ((performance.now() - t0) / 1000);
  const got = await count(receiver);
  if (got.requests !== per * loops) throw new Error(`the receiver counted ${got.requests} of ${per * loops} POSTs`);
  return perS;
}

export async function runWebhooks({ infra, log, events = 3000, cpuProfDir }) {
  const { connectNats, newEvent, publishEvents } = await import("@feeds/kit");
  return withSystem(
    infra,
    log,
    "bench 11",
    async (c) => {
      const rx = c.helper(startNode(join(benchDir, "webhook-receiver.mjs"), { name: "webhook-receiver" }));
      const { url: receiver } = await rx.ready;
      await fetchLoop(receiver, 300, PARALLEL); // warm-up: sockets, JIT
      const fetch1 = await fetchLoop(receiver, events, 1);
      const fetchBefore = await fetchLoop(receiver, events, PARALLEL);
      log(`  fetch POST loops before: 1 at a time ${fetch1.toFixed(0)}/s, ${PARALLEL} at a time ${fetchBefore.toFixed(0)}/s`);

      await api(c.url, "POST", "/v1/webhooks", { token: c.tenant.token, body: { url: `${receiver}/hook` } });
      await fetch(`${receiver}/reset`, { method: "POST" });
      const nats = await connectNats({ NATS_URL: infra.natsUrl, FEEDS_NAMESPACE: c.namespace }, "bench");
      let published;
      let t0;
      let got;
      let cpu;
      let ended;
      try {
        const list = Array.from({ length: events }, () => newEvent("webhook.test", c.tenant.id, { message: "x".repeat(200) }));
        const meter = cpuMeter([c.gatewayPid, rx.child.pid]);
        if (cpuProfDir && c.gatewayPid) process.kill(c.gatewayPid, "SIGUSR2");
        t0 = Date.now();
        for (let i = 0; i < list.length; i += 200) await publishEvents(nats, list.slice(i, i + 200));
        published = Date.now();
        for (;;) {
          got = await count(receiver);
          if (got.ids >= events) break;
          if (Date.now() - t0 > 300_000) throw new Error(`only ${got.ids} of ${events} delivered in 300 s`);
          await sleep(20);
        }
        cpu = meter.end();
        ended = Date.now();
        if (cpuProfDir && c.gatewayPid) {
          process.kill(c.gatewayPid, "SIGUSR2");
          log(`  CPU profile of the system over the deliveries: ${join(cpuProfDir, `gateway-${c.gatewayPid}.cpuprofile`)}`);
        }
      } finally {
        await nats.close().catch(() => undefined);
      }
      const seconds = (got.lastAt - t0) / 1000;
      const deliveries = events / seconds;
      // CPU the system spent per delivery: less sensitive than the rate to other work on the machine.
      const cpuMsPer = (cpu.processCores[0] * ((ended - t0) / 1000) * 1000) / events;
      const fetchAfter = await fetchLoop(receiver, events, PARALLEL);
      const fetch1After = await fetchLoop(receiver, events, 1);
      const floor = (fetchBefore + fetchAfter) / 2;
      const floor1 = (fetch1 + fetch1After) / 2;
      log(
        `  ${events} events published in ${published - t0} ms; the ${events}th distinct delivery ${seconds.toFixed(2)} s after the first publish ` +
          `(${got.requests} requests in all) = ${deliveries.toFixed(0)} deliveries/s; system ${(cpu.processCores[0] * 100).toFixed(0)}% core (${cpuMsPer.toFixed(2)} ms CPU a delivery), ` +
          `receiver ${(cpu.processCores[1] * 100).toFixed(0)}%, shared servers ${cpu.infraCores.toFixed(2)}, other people's work ${cpu.otherCores.toFixed(2)} cores`,
      );
      log(
        `  fetch POST loops after: 1 at a time ${fetch1After.toFixed(0)}/s, ${PARALLEL} at a time ${fetchAfter.toFixed(0)}/s; ` +
          `ratio to one loop ${((deliveries / floor1) * 100).toFixed(1)}%, to ${PARALLEL} loops ${((deliveries / floor) * 100).toFixed(1)}%`,
      );
      return {
        namespace: c.namespace,
        loadAverage: c.loadAverage,
        events,
        seconds,
        publishMs: published - t0,
        requests: got.requests,
        deliveries,
        systemCores: cpu.processCores[0],
        systemCpuMsPerDelivery: cpuMsPer,
        receiverCores: cpu.processCores[1],
        machine: { machineCores: cpu.machineCores, infraCores: cpu.infraCores, otherCores: cpu.otherCores, otherTop: cpu.otherTop },
        fetch1: { before: fetch1, after: fetch1After, mean: floor1 },
        fetchParallel: { before: fetchBefore, after: fetchAfter, mean: floor, loops: PARALLEL },
        ratio1: deliveries / floor1,
        ratio: deliveries / floor,
      };
    },
    { env: { WEBHOOK_ALLOW_PRIVATE: "1" }, cpuProfDir },
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const arg = (name, d) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
  const { setup, log } = await import("../../scripts/lib/setup.mjs");
  const infra = await setup({ skipBuild: process.argv.includes("--skip-build") });
  const cpuProfDir = process.argv.includes("--cpu-prof") ? join(benchDir, "..", "..", ".cache", "bench", "prof") : undefined;
  const result = await runWebhooks({ infra, log, events: arg("events", 3000), cpuProfDir });
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
