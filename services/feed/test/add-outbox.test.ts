import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromRpcError, scope, type Outbox, type PendingChange } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import type { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import type { ActivityDoc, ActivityRepository } from "../src/activity-repository.js";
import type { EntryRepository } from "../src/entry-repository.js";
import { localFeedService } from "./local-feed-service.js";

// An add inserts its activity with the fan-out task pending in it (kit's outbox). A writer that
// died after that insert leaves the change there; the outbox relay finishes it: the origin entry
// (the writer may have died before it), head and signal, then the task, once in effect (a writer
// that had published it before dying makes the relay's publish a duplicate JetStream drops). Real
// MongoDB-wire storage, Redis and NATS JetStream; no fan-out worker runs, so the tasks stay in the
// work-queue stream to be counted.

/** Hooks the next origin-entry writes run before reaching storage (each used once). */
const entryHooks: Array<() => Promise<void>> = [];
/** The documents the write path inserted, by id (with their pending change). */
const inserted = new Map<string, ActivityDoc>();

const GRACE_MS = 300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("add: a writer that died after its insert is fanned out by the outbox relay, once", { timeout: 30_000 }, () => {
  const env = createTestEnv("feed_add_outbox", { db: true, redis: true, nats: { queues: ["fanout", "notify"] } });
  let client: Client<typeof FeedService>;
  let activities: ActivityRepository;
  let entries: EntryRepository;
  let outbox: Outbox;
  const tenant = `t-${randomBytes(4).toString("hex")}`;
  const call = scope({ tenantId: tenant, caller: { kind: "server" } });

  beforeAll(async () => {
    await env.open();
    ({ client, activities, entries, outbox } = localFeedService(env, {
      graceMs: GRACE_MS,
      activities: (real) => ({
        ...real,
        insert: async (doc) => {
          inserted.set(doc._id, doc);
          return real.insert(doc);
        },
      }),
      entries: (real) => ({
        ...real,
        upsertMany: async (tenantId, items) => {
          await entryHooks.shift()?.();
          return real.upsertMany(tenantId, items);
        },
      }),
    }));
    await activities.ensureIndexes();
    await outbox.ensureIndexes();
  });

  afterAll(async () => {
    await outbox.stop();
    await env.close();
  });

  /** Activity tasks in the fan-out work queue, by activity id (sorted). */
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

  const add = (feed: string, object: string) =>
    client.addActivity({ feed: { group: "user", id: feed }, activity: { actor: "service:x", verb: "post", object, customJson: "{}", refs: [] } }, call);
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => "OK",
      (e: unknown) => fromRpcError(e).code,
    );
  const pendingOf = async (id: string) => (await env.db.collection<ActivityDoc>("activities").findOne({ _id: id }))?.outbox ?? [];
  const originIds = async (feed: string) => (await entries.page(tenant, feed, 10, null)).map((e) => e.activity_id);
  /** The relay, once every change is past its grace. */
  const relay = async () => {
    await outbox.flush();
    await sleep(GRACE_MS + 50);
    return outbox.relayOnce();
  };

  it("died after the insert, before its origin entry: the relay writes the entry and publishes the task once", async () => {
    const before = await tasks();
    // A writer that finished: its task is out and its change cleared; the relay has nothing of it.
    const finished = (await add("done", "o:done")).activity!;
    // A writer that died after its insert (its process stopped before the origin entry).
    entryHooks.push(async () => {
      throw new Error("the writer's process died here");
    });
    expect(await outcome(add("died", "o:died"))).toBe("INTERNAL");
    const died = [...inserted.values()].find((d) => d.object === "o:died")!;
    expect(await pendingOf(died._id)).toHaveLength(1);
    expect(await originIds("user:died")).toEqual([]);
    expect((await tasks()).filter((a) => !before.includes(a))).toEqual([finished.id]);

    expect(await relay()).toBe(1);
    expect(await originIds("user:died")).toEqual([died._id]);
    expect(await pendingOf(died._id)).toEqual([]);
    // The origin feed reads it (its head and cache were written by the finish).
    expect((await client.readFeed({ feed: { group: "user", id: "died" } }, call)).activities.map((a) => a.id)).toEqual([died._id]);
    // A second pass finds nothing; each activity has one task.
    expect(await relay()).toBe(0);
    expect((await tasks()).filter((a) => !before.includes(a))).toEqual([finished.id, died._id].sort());
  });

  it("died after publishing its task, before the clear: the relay's publish is a duplicate JetStream drops", async () => {
    const before = await tasks();
    const a = (await add("published", "o:published")).activity!;
    await outbox.flush();
    expect(await pendingOf(a.id)).toEqual([]);
    // The state a writer leaves that published and died before its clear landed: the change as it
    // was inserted, still pending.
    const change = inserted.get(a.id)?.outbox?.[0] as PendingChange;
    await env.db.collection<ActivityDoc>("activities").updateOne({ _id: a.id }, { $push: { outbox: change }, $set: { outbox_pending: true } });

    expect(await relay()).toBe(1);
    expect(await pendingOf(a.id)).toEqual([]);
    expect((await tasks()).filter((id) => !before.includes(id))).toEqual([a.id]);
    expect(await originIds("user:published")).toEqual([a.id]);
  });

  it("died after the insert, and the activity was deleted before the relay ran: no entry is left, the task finds a tombstone", async () => {
    entryHooks.push(async () => {
      throw new Error("the writer's process died here");
    });
    expect(await outcome(add("gone", "o:gone"))).toBe("INTERNAL");
    const gone = [...inserted.values()].find((d) => d.object === "o:gone")!;
    await client.deleteActivity({ id: gone._id }, call);
    await relay();
    expect(await originIds("user:gone")).toEqual([]);
    expect(await pendingOf(gone._id)).toEqual([]);
    expect((await activities.get(tenant, gone._id))?.deleted_at).toBeInstanceOf(Date);
  });
});
