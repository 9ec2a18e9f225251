import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scope, type Outbox } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import type { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { localFeedService } from "./local-feed-service.js";

// The feed's change signal is answered from Redis alone once the feed's head is warm: the
// service's MongoDB client monitors its commands, and a warm signal call issues none. An empty
// feed keeps nothing in Redis (any feed name may be polled): it costs one query instead.

describe("feed signal", () => {
  const commands: string[] = [];
  const env = createTestEnv("feed_signal", { db: { onCommand: (e) => commands.push(e.commandName) }, redis: true, nats: { queues: ["fanout"] } });
  let client: Client<typeof FeedService>;
  let outbox: Outbox;
  const call = scope({ tenantId: "t1", caller: { kind: "server" } });

  beforeAll(async () => {
    await env.open();
    ({ client, outbox } = localFeedService(env));
  });

  afterAll(async () => {
    await outbox.stop();
    await env.close();
  });

  // An add's background clear (its settled change) is done before the commands are counted.
  const add = async (feed: string, object: string) => {
    const added = await client.addActivity({ feed: { group: "user", id: feed }, activity: { actor: "system:x", verb: "post", object, customJson: "{}", refs: [] } }, call);
    await outbox.flush();
    return added;
  };
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

  it("answers an empty feed with the stable version 0 from one query, storing nothing in Redis", async () => {
    const keys = async () => (await env.redis.redis.keys(`${env.namespace}:*empty*`)).sort();
    for (let i = 0; i < 3; i++) {
      commands.length = 0;
      expect(await signal("empty")).toMatchObject({ version: 0n, head: "" });
      expect(commands).toEqual(["find"]);
    }
    expect(await keys()).toEqual([]);
  });
});
