import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCountSignal, createInternalAuth, createLocalTransport, createLocks, scope } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { createActivityRepository } from "../src/activity-repository.js";
import { createEntryRepository } from "../src/entry-repository.js";
import { createActivityCache } from "../src/activity-cache.js";
import { createFanout } from "../src/fanout.js";
import { createHeads } from "../src/heads.js";
import { createSignals } from "../src/signals.js";
import { createFeedService } from "../src/routes.js";
import { createActivityEvents, createFeedOutbox } from "../src/events.js";

// The feed's change signal is answered from Redis alone once the feed's head is warm: the
// service's MongoDB client monitors its commands, and a warm signal call issues none.

describe("feed signal", () => {
  const commands: string[] = [];
  const env = createTestEnv("feed_signal", { db: { onCommand: (e) => commands.push(e.commandName) }, redis: true, nats: { queues: ["fanout"] } });
  let client: Client<typeof FeedService>;
  const call = scope({ tenantId: "t1", caller: { kind: "server" } });

  beforeAll(async () => {
    await env.open();
    const { db, redis, nats, log } = env;
    const activities = createActivityRepository(db);
    const entries = createEntryRepository(db);
    const [signals, heads, cache] = [createSignals(redis), createHeads(redis), createActivityCache(redis)];
    const peers = () => {
      throw new Error("no peer is called: the actor is not a user");
    };
    const events = createActivityEvents({ peers });
    const outbox = createFeedOutbox({ db, nats, log, activities });
    const fanout = createFanout({ nats, activities, entries, signals, heads, cache, peers, events, log });
    const impl = createFeedService({
      activities, entries, signals, heads, cache, fanout, locks: createLocks(db, "activity_locks"), outbox, events, consoleSignal: createCountSignal(redis, "activities"), peers, log,
    });
    client = createClient(FeedService, createLocalTransport((router) => router.service(FeedService, impl), log, createInternalAuth(randomBytes(32))));
  });

  afterAll(env.close);

  const add = (feed: string, object: string) =>
    client.addActivity({ feed: { group: "user", id: feed }, activity: { actor: "system:x", verb: "post", object, customJson: "{}", refs: [] } }, call);
  const signal = (feed: string) => client.getSignal({ feed: { group: "user", id: feed } }, call);

  it("answers a warm feed's version and newest entry without a database command", async () => {
    const first = (await add("a", "o:1")).activity!;
    await signal("a"); // the write made a partial head: the first signal merges it once
    commands.length = 0;
    const warm = await signal("a");
    expect(warm.head).toBe(first.id);
    const second = (await add("a", "o:2")).activity!;
    commands.length = 0;
    const after = await signal("a");
    expect(after.head).toBe(second.id);
    expect(after.version).toBeGreaterThan(warm.version);
    expect(commands).toEqual([]);
  });

  it("answers an empty feed from Redis after one rebuild", async () => {
    expect((await signal("empty")).head).toBe("");
    commands.length = 0;
    expect((await signal("empty")).head).toBe("");
    expect(commands).toEqual([]);
  });
});
