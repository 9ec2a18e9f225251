import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromRpcError, scope, toTimestamp } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import type { FeedService, Activity } from "@feeds/proto/feeds/feed/v1/feed";
import type { ActivityDoc, ActivityRepository } from "../src/activity-repository.js";
import type { EntryRepository } from "../src/entry-repository.js";
import { localFeedService } from "./local-feed-service.js";

// The dedupe claim of the write path on real MongoDB-wire storage (FerretDB here), Redis and
// NATS JetStream, in a namespace of its own dropped afterwards, served over Connect's in-memory
// router transport. The interleavings a plain race almost never hits are made here on purpose:
// the activity insert and the origin-entry write of a chosen writer can be held or failed.

/** Hooks the next activity insert / entry write runs before reaching storage (each used once). */
const hooks: { insert: Array<(doc: ActivityDoc) => Promise<void>>; entries: Array<() => Promise<void>> } = { insert: [], entries: [] };

describe("dedupe claim: the first writer's body wins and its origin entry exists", () => {
  const env = createTestEnv("feed_dedupe", { db: true, redis: true, nats: { queues: ["fanout"] } });
  let activities: ActivityRepository;
  let entries: EntryRepository;
  let client: Client<typeof FeedService>;

  beforeAll(async () => {
    await env.open();
    ({ client, activities, entries } = localFeedService(env, {
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

  afterAll(env.close);

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

  it("a claimant that died before storing its activity: the next writer stores the claimant's body under its id", { timeout: 20_000 }, async () => {
    const t = tenant();
    const time = new Date(Date.UTC(2024, 0, 1));
    hooks.insert.push(async () => {
      throw new Error("the claimant's process died here");
    });
    expect(await failure(post(t, "a", "fid-1", time))).toBe("INTERNAL");

    const answer = (await post(t, "b", "fid-1", time)).activity;
    expect(body(answer)).toMatchObject({ object: "object-a", custom: JSON.stringify({ side: "a" }), origin: "user:a" });
    const stored = await activities.get(t, answer?.id ?? "");
    expect(stored).toMatchObject({ object: "object-a", origin_feed: "user:a" });
    expect(await originIds(t, "user:a")).toEqual([answer?.id]);
    expect(await originIds(t, "user:b")).toEqual([]);
  });

  it("a writer whose activity a racing duplicate stored first answers its own body and still writes its origin entry", { timeout: 20_000 }, async () => {
    const t = tenant();
    const time = new Date(Date.UTC(2024, 0, 2));
    let paused!: () => void;
    const aPaused = new Promise<void>((r) => (paused = r));
    let resume!: () => void;
    const aResumes = new Promise<void>((r) => (resume = r));
    // Writer a claims the identity, then stalls before its activity insert.
    hooks.insert.push(async () => {
      paused();
      await aResumes;
    });
    const a = post(t, "a", "fid-2", time);
    await aPaused;
    // Writer b, a duplicate, stores the activity and dies before writing the origin entry.
    hooks.entries.push(async () => {
      throw new Error("the duplicate's process died here");
    });
    expect(await failure(post(t, "b", "fid-2", time))).toBe("INTERNAL");
    resume();

    const answer = (await a).activity;
    expect(body(answer)).toMatchObject({ object: "object-a", custom: JSON.stringify({ side: "a" }), origin: "user:a" });
    expect(await activities.get(t, answer?.id ?? "")).toMatchObject({ object: "object-a", origin_feed: "user:a" });
    expect(await originIds(t, "user:a")).toEqual([answer?.id]);
    // b's retry answers the same activity.
    expect(body((await post(t, "b", "fid-2", time)).activity)).toEqual(body(answer));
    expect(await originIds(t, "user:b")).toEqual([]);
  });
});
