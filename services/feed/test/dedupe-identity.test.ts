import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromRpcError, scope, toTimestamp, type Outbox } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import type { FeedService, Activity } from "@feeds/proto/feeds/feed/v1/feed";
import { identityId, type ActivityDoc, type ActivityRepository } from "../src/activity-repository.js";
import type { EntryRepository } from "../src/entry-repository.js";
import { localFeedService } from "./local-feed-service.js";

// The (foreign_id, time) identity is the activity's id: a name-based UUID of the tenant and the
// pair, so every write of one identity inserts the same `_id`, the first insert wins and a
// duplicate answers the stored activity (a tombstone: 409). Real MongoDB-wire storage, Redis and
// NATS JetStream, served over Connect's in-memory router transport; the interleavings a plain race
// almost never hits are made on purpose by holding or failing a chosen writer's insert or origin
// entry.

/** Hooks the next activity insert / entry write runs before reaching storage (each used once). */
const hooks: { insert: Array<(doc: ActivityDoc) => Promise<void>>; entries: Array<() => Promise<void>> } = { insert: [], entries: [] };

describe("dedupe by (foreign_id, time): the first insert's body wins and its origin entry exists", { timeout: 20_000 }, () => {
  const env = createTestEnv("feed_dedupe", { db: true, redis: true, nats: { queues: ["fanout", "notify"] } });
  let activities: ActivityRepository;
  let entries: EntryRepository;
  let client: Client<typeof FeedService>;
  let outbox: Outbox;

  beforeAll(async () => {
    await env.open();
    ({ client, activities, entries, outbox } = localFeedService(env, {
      activities: (real) => ({
        ...real,
        insert: async (doc) => {
          await hooks.insert.shift()?.(doc);
          return real.insert(doc);
        },
      }),
      entries: (real) => ({
        ...real,
        upsertMany: async (tenantId, items) => {
          await hooks.entries.shift()?.();
          return real.upsertMany(tenantId, items);
        },
      }),
    }));
  });

  afterAll(async () => {
    await outbox.stop();
    await env.close();
  });

  const tenant = () => `t-${randomBytes(4).toString("hex")}`;
  const post = (tenantId: string, side: "a" | "b", foreignId: string, time: Date) =>
    client.addActivity(
      {
        feed: { group: "user", id: side },
        activity: {
          actor: "service:importer",
          verb: "post",
          object: `object-${side}`,
          foreignId,
          time: toTimestamp(time),
          customJson: JSON.stringify({ side }),
          refs: [],
        },
      },
      scope({ tenantId, caller: { kind: "server" } }),
    );
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => "OK",
      (e: unknown) => fromRpcError(e).code,
    );
  const body = (a: Activity | undefined) => a && { id: a.id, object: a.object, custom: a.customJson, origin: a.originFeed };
  const originIds = async (tenantId: string, feed: string) => (await entries.page(tenantId, feed, 10, null)).map((e) => e.activity_id);

  it("the id is the identity's, per tenant: the same pair in two tenants makes two activities", async () => {
    const [t1, t2] = [tenant(), tenant()];
    const time = new Date(Date.UTC(2024, 0, 1));
    const one = (await post(t1, "a", "fid-0", time)).activity;
    const two = (await post(t2, "a", "fid-0", time)).activity;
    expect(one?.id).toBe(identityId(t1, "fid-0", time));
    expect(two?.id).toBe(identityId(t2, "fid-0", time));
    expect(one?.id).not.toBe(two?.id);
    // A retry answers the stored activity, not created again.
    const again = await post(t1, "b", "fid-0", time);
    expect(again.created).toBe(false);
    expect(body(again.activity)).toEqual(body(one));
  });

  it("a writer that died after its insert, before its origin entry: the next writer answers its body and writes its origin entry", async () => {
    const t = tenant();
    const time = new Date(Date.UTC(2024, 0, 2));
    hooks.entries.push(async () => {
      throw new Error("the first writer's process died here");
    });
    expect(await failure(post(t, "a", "fid-1", time))).toBe("INTERNAL");

    const answer = await post(t, "b", "fid-1", time);
    expect(answer.created).toBe(false);
    expect(body(answer.activity)).toMatchObject({ object: "object-a", custom: JSON.stringify({ side: "a" }), origin: "user:a" });
    expect(await originIds(t, "user:a")).toEqual([answer.activity?.id]);
    expect(await originIds(t, "user:b")).toEqual([]);
  });

  it("a writer held before its insert while a duplicate stored the identity (and died before its origin entry) answers the stored body and writes that origin entry", async () => {
    const t = tenant();
    const time = new Date(Date.UTC(2024, 0, 3));
    let paused!: () => void;
    const aPaused = new Promise<void>((r) => (paused = r));
    let resume!: () => void;
    const aResumes = new Promise<void>((r) => (resume = r));
    // Writer a stalls before its activity insert.
    hooks.insert.push(async () => {
      paused();
      await aResumes;
    });
    const a = post(t, "a", "fid-2", time);
    await aPaused;
    // Writer b, a duplicate, inserts first and dies before writing the origin entry.
    hooks.entries.push(async () => {
      throw new Error("the duplicate's process died here");
    });
    expect(await failure(post(t, "b", "fid-2", time))).toBe("INTERNAL");
    resume();

    const answer = (await a).activity;
    expect(body(answer)).toMatchObject({ object: "object-b", custom: JSON.stringify({ side: "b" }), origin: "user:b" });
    expect(await activities.get(t, answer?.id ?? "")).toMatchObject({ object: "object-b", origin_feed: "user:b" });
    expect(await originIds(t, "user:b")).toEqual([answer?.id]);
    expect(await originIds(t, "user:a")).toEqual([]);
  });

  it("a deleted activity keeps its identity burned: a re-post answers CONFLICT and stores nothing", async () => {
    const t = tenant();
    const time = new Date(Date.UTC(2024, 0, 4));
    const first = (await post(t, "a", "fid-3", time)).activity!;
    await client.deleteActivity({ id: first.id }, scope({ tenantId: t, caller: { kind: "server" } }));
    expect(await failure(post(t, "a", "fid-3", time))).toBe("CONFLICT");
    expect(await failure(post(t, "b", "fid-3", time))).toBe("CONFLICT");
    expect(await originIds(t, "user:a")).toEqual([]);
    expect(await originIds(t, "user:b")).toEqual([]);
  });
});
