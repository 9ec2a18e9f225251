import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scope } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { localFeedService, type LocalFeedService } from "./local-feed-service.js";

// CopyHistory answers which activities' entries it created, and RemoveHistory with activity ids
// takes back only those: what the graph's history worker needs to undo a copy that an unfollow
// raced without removing entries an earlier unfollow kept.

describe("history copies and removals", () => {
  const env = createTestEnv("feed_history", { db: true, redis: true, nats: { queues: ["fanout"] } });
  let feed: LocalFeedService;
  let writer: LocalFeedService;
  const call = scope({ tenantId: "t1", caller: { kind: "system" } });
  const server = scope({ tenantId: "t1", caller: { kind: "server" } });
  const source = { group: "timeline", id: "me" };
  const target = { group: "user", id: "star" };

  beforeAll(async () => {
    await env.open();
    feed = localFeedService(env, { caller: "graph-worker" });
    writer = localFeedService(env);
  });
  afterAll(async () => {
    await Promise.all([feed.outbox.stop(), writer.outbox.stop()]);
    await env.close();
  });

  const ids = async () => (await feed.entries.page("t1", "timeline:me", 50, null)).map((e) => e.activity_id).sort();

  it("a copy answers the entries it created; a removal naming them takes back those alone", async () => {
    const posted: string[] = [];
    for (const o of ["o:1", "o:2", "o:3"]) {
      const a = await writer.client.addActivity({ feed: target, activity: { actor: "system:x", verb: "post", object: o, customJson: "{}", refs: [] } }, server);
      posted.push(a.activity?.id ?? "");
    }
    await writer.outbox.flush();
    // One entry is there already (an earlier follow's copy an unfollow kept).
    expect((await feed.client.copyHistory({ source, target, limit: 1 }, call)).inserted).toEqual([posted[2]]);
    const copy = await feed.client.copyHistory({ source, target, limit: 3 }, call);
    expect(copy).toMatchObject({ copied: 2, inserted: [posted[1], posted[0]] });
    expect((await feed.client.copyHistory({ source, target, limit: 3 }, call)).inserted).toEqual([]);
    expect((await feed.client.removeHistory({ source, target, activityIds: copy.inserted }, call)).removed).toBe(2);
    expect(await ids()).toEqual([posted[2]]);
    expect((await feed.client.removeHistory({ source, target }, call)).removed).toBe(1);
    expect(await ids()).toEqual([]);
  });
});
