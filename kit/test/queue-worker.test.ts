import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats, consumersServing, createQueueWorker, processMetrics, type Nats, type QueueWorker } from "../src/index.js";
import { createTestEnv } from "../src/testing.js";

// The queue worker against real NATS JetStream, in a namespace of its own: a short ack wait finds
// a dead worker's task within about that wait, and heartbeats keep a long task that still runs
// from being delivered twice.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ACK_WAIT_MS = 1000;

describe("queue worker", { timeout: 30_000 }, () => {
  const env = createTestEnv("kit_queue", { nats: { queues: ["fanout"] } });
  const workers: QueueWorker[] = [];
  /** A worker on its own subject of the fanout queue (work-queue consumers may not overlap). */
  const worker = (
    subject: string,
    handle: Parameters<typeof createQueueWorker>[0]["handle"],
    o: { nats?: Nats; ackWaitMs?: number; concurrency?: number; maxDeliver?: number; backoffMs?: number[] } = {},
  ) => {
    const w = createQueueWorker({
      nats: o.nats ?? env.nats,
      log: env.log,
      queue: "fanout",
      durable: subject,
      subject,
      handle,
      heartbeat: true,
      ackWaitMs: o.ackWaitMs ?? ACK_WAIT_MS,
      ...(o.concurrency ? { concurrency: o.concurrency } : {}),
      ...(o.maxDeliver ? { maxDeliver: o.maxDeliver } : {}),
      ...(o.backoffMs ? { backoffMs: o.backoffMs } : {}),
    });
    workers.push(w);
    return w;
  };
  const publish = (subject: string) => env.nats.js.publish(env.nats.subject("fanout", subject), new TextEncoder().encode("{}"));

  beforeAll(env.open);
  afterAll(async () => {
    for (const w of workers) await w.stop().catch(() => undefined);
    await env.close();
  });

  it("a task's publish-to-done time is observed once it is done: the longest of them is the max gauge", async () => {
    const latency = async () => (await processMetrics().queueTaskLatencyMax.get()).values.find((v) => v.labels.consumer === "timed")?.value;
    let n = 0;
    await worker("timed", async () => {
      await sleep(++n === 1 ? 300 : 50);
    }).start();
    await publish("timed");
    while ((await latency()) === undefined) await sleep(20);
    expect(await latency()).toBeGreaterThanOrEqual(0.3);
    await publish("timed");
    await sleep(300);
    // The shorter second task leaves the longest where it was; both were counted.
    expect(await latency()).toBeLessThan(1);
    expect(await latency()).toBeGreaterThanOrEqual(0.3);
    const h = (await processMetrics().queueTaskLatency.get()).values.find((v) => v.labels.consumer === "timed" && v.metricName?.endsWith("_count"));
    expect(h?.value).toBe(2);
  });

  it("a task running three times the ack wait sends heartbeats and is delivered once", async () => {
    const deliveries: number[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    await worker("long", async (m) => {
      deliveries.push(m.info.redeliveryCount);
      await sleep(3 * ACK_WAIT_MS);
      done();
    }).start();
    await publish("long");
    await finished;
    await sleep(ACK_WAIT_MS);
    expect(deliveries).toEqual([1]);
  });

  it("the task of a worker that died mid-task runs elsewhere within about the ack wait", async () => {
    const dying = await connectNats(env.config, "dying");
    let began!: () => void;
    const running = new Promise<void>((r) => (began = r));
    const a = worker(
      "crash",
      () => {
        began();
        return new Promise<void>(() => undefined); // never ends: its process dies
      },
      { nats: dying },
    );
    await a.start();
    await publish("crash");
    await running;
    await a.stop();
    await dying.nc.close();
    const diedAt = Date.now();
    let took!: (ms: number) => void;
    const redelivered = new Promise<number>((r) => (took = r));
    await worker("crash", async () => took(Date.now() - diedAt)).start();
    expect(await redelivered).toBeLessThan(ACK_WAIT_MS + 1500);
  });

  it("a detached task no longer counts toward the concurrency: the next is taken while it waits, and it is acknowledged once it ends", async () => {
    const seen: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let second!: () => void;
    const secondDone = new Promise<void>((r) => (second = r));
    await worker(
      "detach",
      async (m, detach) => {
        const body = new TextDecoder().decode(m.data);
        seen.push(`${body}#${m.info.redeliveryCount}`);
        if (body === '"first"') {
          detach();
          await gate;
        } else second();
      },
      { concurrency: 1 },
    ).start();
    const subject = env.nats.subject("fanout", "detach");
    await env.nats.js.publish(subject, new TextEncoder().encode('"first"'));
    await env.nats.js.publish(subject, new TextEncoder().encode('"second"'));
    // One task at a time, yet the second runs while the first still waits.
    await Promise.race([secondDone, sleep(5000).then(() => Promise.reject(new Error(`the second task waited: ${seen.join(", ")}`)))]);
    open();
    await sleep(3 * ACK_WAIT_MS);
    expect(seen).toEqual(['"first"#1', '"second"#1']);
  });

  it("a consumer made with another ack wait takes the configured one", async () => {
    const old = worker("upgrade", async () => undefined, { ackWaitMs: 30_000 });
    await old.start();
    await old.stop();
    await worker("upgrade", async () => undefined).start();
    const { nats } = env;
    const info = await nats.jsm.consumers.info(nats.stream("fanout"), `${nats.stream("fanout")}_upgrade`);
    expect(info.config.ack_wait).toBe(ACK_WAIT_MS * 1_000_000);
  });

  it("a task answered `later` comes back after that delay (a fractional one too), twice, then is done", async () => {
    const seen: number[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    await worker("later", async (m) => {
      seen.push(Date.now());
      if (m.info.redeliveryCount < 3) return { laterMs: 400.1234567 };
      done();
      return undefined;
    }).start();
    await publish("later");
    await finished;
    expect(seen).toHaveLength(3);
    for (let i = 1; i < seen.length; i++) expect((seen[i] as number) - (seen[i - 1] as number)).toBeGreaterThanOrEqual(380);
  });

  it("a task failing while NATS has no responders for its publish (a stream without a leader) is retried past maxDeliver, and a task's own failure is dead-lettered at it", async () => {
    const { nats } = env;
    const dlq = async () => (await nats.jsm.streams.info(nats.stream("fanout_dlq"))).state.messages;
    const before = await dlq();
    const outage: number[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    await worker(
      "outage",
      async (m) => {
        outage.push(m.info.redeliveryCount);
        // No stream takes this subject: JetStream answers 503, as while a stream elects its leader.
        if (m.info.redeliveryCount < 5) await nats.js.publish(nats.subject("nostream", "x"), new Uint8Array());
        done();
      },
      { maxDeliver: 2, backoffMs: [50] },
    ).start();
    const poison: number[] = [];
    await worker(
      "poison",
      async (m) => {
        poison.push(m.info.redeliveryCount);
        throw new Error("the task's own failure");
      },
      { maxDeliver: 2, backoffMs: [50] },
    ).start();
    await publish("outage");
    await publish("poison");
    await Promise.race([finished, sleep(10_000).then(async () => Promise.reject(new Error(`not done after deliveries ${outage.join(", ")}; dead letters ${(await dlq()) - before}`)))]);
    for (let i = 0; i < 50 && (await dlq()) < before + 1; i++) await sleep(100);
    expect(outage).toEqual([1, 2, 3, 4, 5]);
    expect(poison).toEqual([1, 2]);
    expect(await dlq()).toBe(before + 1);
  });

  // Last: it stops every worker of this file.
  it("stop() waits for the task in hand to be acknowledged; the process serves only while every started consumer loop runs", { timeout: 40_000 }, async () => {
    for (const x of workers.splice(0)) await x.stop();
    expect(consumersServing()).toBe(false);
    let finished = false;
    let began!: () => void;
    const running = new Promise<void>((r) => (began = r));
    const w = worker("stopping", async () => {
      began();
      await sleep(500);
      finished = true;
    });
    await w.start();
    // Serving as soon as start() resolves (its consumer exists, NATS answered): a worker process
    // answers its readiness probe once it listens, before its consume loop's first beat.
    expect(consumersServing()).toBe(true);
    await publish("stopping");
    await running;
    await w.stop();
    expect(finished).toBe(true);
    // Acknowledged, not left for another worker: a new one on the same consumer gets nothing.
    let again = 0;
    const next = worker("stopping", async () => {
      again++;
    });
    await next.start();
    await sleep(2 * ACK_WAIT_MS);
    expect(again).toBe(0);
    expect(consumersServing()).toBe(true);
    // One loop that stops beating (its connection gone) is enough to make the process unready.
    const dead = await connectNats(env.config, "dead");
    await worker("dead", async () => undefined, { nats: dead }).start();
    for (let i = 0; i < 100 && !consumersServing(); i++) await sleep(50);
    await dead.nc.close();
    await sleep(6000);
    expect(consumersServing()).toBe(false);
    for (const x of workers) await x.stop();
    expect(consumersServing()).toBe(false);
  });
});
