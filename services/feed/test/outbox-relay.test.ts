import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnv } from "@feeds/kit/testing";
import { createActivityRepository, type ActivityDoc, type ActivityRepository } from "../src/activity-repository.js";
import { createEntryRepository } from "../src/entry-repository.js";
import { createActivityCache } from "../src/activity-cache.js";
import { createFanout } from "../src/fanout.js";
import { createHeads } from "../src/heads.js";
import { createSignals } from "../src/signals.js";
import { createActivityEvents } from "../src/events.js";

// The fan-out's two relays on real MongoDB-wire storage (FerretDB here) and NATS JetStream, in a
// namespace of its own dropped afterwards. No worker runs: the tasks stay in the work-queue stream
// to be counted.
// - Intents: a write publishes a fan-out intent before its insert. If it dies after the insert,
//   before its task, the intent relay publishes the task once the intent's grace has passed; an
//   intent whose activity was never stored publishes nothing.
// - Outbox marks: a write whose intent NATS did not take stores the activity with a mark. The
//   relay publishes it; a process dying between that publish and the mark's clear leaves it to the
//   next relay, which must not send a second task.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fan-out outbox: a crash at any point of an add still fans out, once", () => {
  const env = createTestEnv("feed_outbox", { db: true, redis: true, nats: { queues: ["fanout", "fanout_intents"] } });
  let activities: ActivityRepository;
  const stops: Array<() => Promise<void>> = [];

  /** A process's fan-out (relay, publish) over `repo`; stopped after the tests unless it `dies`. */
  function processWith(repo: ActivityRepository, dies = false, intentGraceMs?: number) {
    const peers = () => {
      throw new Error("no peer is called: no worker runs");
    };
    const fanout = createFanout({
      nats: env.nats,
      activities: repo,
      entries: createEntryRepository(env.db),
      signals: createSignals(env.redis),
      heads: createHeads(env.redis),
      cache: createActivityCache(env.redis),
      peers,
      events: createActivityEvents({ peers }),
      log: env.log,
      ...(intentGraceMs !== undefined ? { intentGraceMs } : {}),
    });
    if (!dies) stops.push(() => fanout.stop());
    return fanout;
  }

  /** Activity tasks in the work queue, by activity id. */
  async function tasks(): Promise<string[]> {
    const stream = env.nats.stream("fanout");
    const { state } = await env.nats.jsm.streams.info(stream);
    const out: string[] = [];
    for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
      const m = await env.nats.jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (m) out.push((JSON.parse(new TextDecoder().decode(m.data)) as { a: string }).a);
    }
    return out.sort();
  }

  async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  }

  const pending = async (id: string) => (await activities.get(tenant, id))?.fanout_pending === true;

  const tenant = `t-${randomBytes(4).toString("hex")}`;
  /** An activity as the write path stores it, with its outbox mark unless `marked` is false. */
  async function stored(marked = true, insert = true): Promise<ActivityDoc> {
    const now = new Date();
    const doc: ActivityDoc = {
      _id: randomUUID(),
      tenant_id: tenant,
      actor: "service:x",
      verb: "post",
      object: "o",
      target: null,
      foreign_id: null,
      time: now,
      custom_json: "{}",
      origin_feed: "user:a",
      refs: [],
      reaction_counts: {},
      version: 1,
      edited_at: null,
      deleted_at: null,
      created_at: now,
      batch: false,
      ...(marked ? { fanout_pending: true } : {}),
    };
    if (insert) await activities.insert(doc);
    return doc;
  }

  beforeAll(async () => {
    await env.open();
    activities = createActivityRepository(env.db);
    await activities.ensureIndexes();
  });

  afterAll(async () => {
    for (const stop of stops) await stop();
    await env.close();
  });

  it("died before the publish, and after it before the mark was cleared: the next process's relay sends each task once", { timeout: 30_000 }, async () => {
    // Process 1 stores two activities. It dies before publishing the first; it publishes the
    // second and dies before its clear reaches storage (the clear never lands).
    const unsent = await stored();
    const sent = await stored();
    const dying = processWith({ ...activities, markPublished: () => new Promise(() => undefined) }, true);
    void dying.publish(sent);
    await until("the second task published", async () => ((await tasks()).length === 1 ? true : undefined));
    expect(await tasks()).toEqual([sent._id]);

    // Process 2 starts its relay: it publishes what is marked and older than 2 s.
    await processWith(activities, false, 500).startRelay(200);
    await until("both outbox marks cleared", async () => (!(await pending(unsent._id)) && !(await pending(sent._id)) ? true : undefined));
    // A republish of the second task is dropped by JetStream (same message id): one task each.
    expect(await tasks()).toEqual([unsent._id, sent._id].sort());
  });

  it("intents: a write that died after its insert gets its task from the relay, once; one never stored gets none", { timeout: 30_000 }, async () => {
    const before = await tasks();
    const fanout = processWith(activities, false, 500);
    // Died after its insert, before its task.
    const orphan = await stored(false);
    // Finished: its own task went out before the relay looked.
    const finished = await stored(false);
    // Died before its insert: the client had an error, and nothing is owed.
    const never = await stored(false, false);
    const seqs = new Map<string, number | null>();
    for (const d of [orphan, finished, never]) seqs.set(d._id, await fanout.intend(d));
    expect([...seqs.values()].every((seq) => typeof seq === "number")).toBe(true);
    await fanout.publishTask(finished, true);
    // The write that published its task deletes its intent: the relay never sees it.
    fanout.forget(seqs.get(finished._id) as number);
    const intents = env.nats.stream("fanout_intents");
    await until("the finished write's intent deleted", async () =>
      (await env.nats.jsm.streams.getMessage(intents, { seq: seqs.get(finished._id) as number }).then(() => undefined, () => true)));
    expect(await env.nats.jsm.streams.getMessage(intents, { seq: seqs.get(orphan._id) as number })).toBeTruthy();
    await fanout.startRelay(60_000);
    await until("the orphan's task published", async () => ((await tasks()).includes(orphan._id) ? true : undefined));
    // The relay has looked at all three (same grace); give it a moment more to publish anything else.
    await sleep(1_000);
    const added = (await tasks()).filter((id) => !before.includes(id));
    expect(added).toEqual([orphan._id, finished._id].sort());
  });

  it("intents: the relay polls, so of 50 intents deleted right after their publish it is handed at most 3 (a standing pull: every one)", { timeout: 30_000 }, async () => {
    const fanout = processWith(activities, false, 500); // polls every 100 ms
    await fanout.startRelay(60_000);
    const intents = env.nats.stream("fanout_intents");
    const delivered = async () => (await env.nats.jsm.consumers.info(intents, `${intents}_relay`)).delivered.consumer_seq;
    // Whatever earlier tests left is handed over and put back within a few polls.
    let before = -1;
    await until("the relay idle", async () => {
      const now = await delivered();
      const idle = now === before;
      before = now;
      return idle ? true : (await sleep(300), undefined);
    });
    // As a write does: its intent, then (its insert and task) the intent's delete.
    for (let i = 0; i < 50; i++) {
      const doc = await stored(false, false);
      const seq = await fanout.intend(doc);
      expect(typeof seq).toBe("number");
      fanout.forget(seq as number);
    }
    await sleep(500); // five polls
    // Only a poll landing between an intent's publish and its delete (about a millisecond each,
    // one at a time here) is handed that intent.
    expect((await delivered()) - before).toBeLessThanOrEqual(3);
  });
});
