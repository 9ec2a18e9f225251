import { Redis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { envelope, http, newTenant, tenantRedisKey } from "../support/api.js";
import { until } from "../support/until.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


describe("batch import of activities", () => {
  it("envelope rules: 400 only for the list itself", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (const body of [{}, { activities: [] }, { activities: {} }, { activities: [3] }, { activities: Array.from({ length: 101 }, () => ({})) }]) {
      const res = await http("POST", "/v1/batch/activities", { token: server, body });
      expect(res.status).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
    expect((await http("POST", "/v1/batch/activities", { token: await t.user("u"), body: { activities: [{}] } })).status).toBe(403);
  });

  it("feeds read before the import (their heads cached, even as empty) show its activities: origin and followers", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("POST", "/v1/feeds/timeline/early/follows", { token: server, body: { target: "user:writer" } })).status).toBe(201);
    const ids = async (feed: string) => ((await http("GET", `/v1/feeds/${feed}`, { token: server })).body.results ?? []).map((a: { id: string }) => a.id);
    // Read twice: the first read caches each feed's head as complete (and empty), the second answers from it.
    for (let i = 0; i < 2; i++) expect([await ids("timeline/early"), await ids("user/writer")]).toEqual([[], []]);
    const res = await http("POST", "/v1/batch/activities", {
      token: server,
      body: { activities: [{ feed: "user:writer", activity: { actor: "user:writer", verb: "post", object: "note:1" } }] },
    });
    expect(res.status).toBe(200);
    const id = (res.body.results as { id: string }[])[0]!.id;
    expect(await ids("user/writer")).toEqual([id]);
    await until("the import on the follower's timeline", async () => ((await ids("timeline/early")).includes(id) ? true : undefined), 10_000);
  });

  it("signals someone reads move with live fan-out and imports (backfills too); writes create no signal keys", async () => {
    const t = await newTenant();
    const server = await t.server();
    // timeline:quiet follows an author with no other activity: only the import reaches it;
    // timeline:idle gets the live post and the import, and nobody reads its signal.
    for (const [reader, author] of [["watch", "w"], ["quiet", "v"], ["idle", "w"]]) {
      expect((await http("POST", `/v1/feeds/timeline/${reader}/follows`, { token: server, body: { target: `user:${author}` } })).status).toBe(201);
    }
    const live = await http("POST", "/v1/feeds/user/w/activities", { token: server, body: { actor: "user:w", verb: "post", object: "note:new" } });
    expect(live.status).toBe(201);
    const ids = async (feed: string) => ((await http("GET", `/v1/feeds/${feed}`, { token: server })).body.results ?? []).map((a: { id: string }) => a.id);
    await until("the live post on the watcher's timeline", async () => ((await ids("timeline/watch")).includes(live.body.id) ? true : undefined), 10_000);
    const signal = async (feed: string) => (await http("GET", `/v1/feeds/${feed}/signal`, { token: server })).body as { version: number; head: string };
    const [origin0, watch0] = [await signal("user/w"), await signal("timeline/watch")];
    expect([origin0.head, watch0.head]).toEqual([live.body.id, live.body.id]);
    // A backfill: older than the newest activity, so the feeds' heads (newest ids) do not change.
    const res = await http("POST", "/v1/batch/activities", {
      token: server,
      body: {
        activities: [
          { feed: "user:w", activity: { actor: "user:w", verb: "post", object: "note:old", time: "2020-01-01T00:00:00.000Z" } },
          { feed: "user:v", activity: { actor: "user:v", verb: "post", object: "note:v" } },
        ],
      },
    });
    expect(res.status).toBe(200);
    const [imported, toQuiet] = (res.body.results as { id: string }[]).map((r) => r.id);
    // The origin's signal has moved when the import answers; the follower's once its fan-out ran.
    expect((await signal("user/w")).version).not.toBe(origin0.version);
    await until("the import on the watcher's timeline", async () => ((await ids("timeline/watch")).includes(imported) ? true : undefined), 10_000);
    expect((await signal("timeline/watch")).version).not.toBe(watch0.version);
    // Nobody read timeline:quiet's signal: the import made no key for it.
    await until("the import on the quiet timeline", async () => ((await ids("timeline/quiet")).includes(toQuiet) ? true : undefined), 10_000);
    const redis = new Redis(inject("redisUrl"));
    try {
      await until("the import on the idle timeline", async () => ((await ids("timeline/idle")).includes(imported) ? true : undefined), 10_000);
      const exists = async (feed: string) => redis.exists(tenantRedisKey(t.id, "fv", feed));
      expect([await exists("timeline:quiet"), await exists("timeline:idle"), await exists("user:v")]).toEqual([0, 0, 0]);
      expect([await exists("timeline:watch"), await exists("user:w")]).toEqual([1, 1]);
    } finally {
      redis.disconnect();
    }
  });

  it("per-item results, unclamped time, fan-out without head keys, idempotent rerun", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("POST", "/v1/feeds/timeline/reader/follows", { token: server, body: { target: "user:author" } })).status).toBe(201);
    const old = "2020-01-02T03:04:05.000Z";
    const items = [
      { feed: "user:author", activity: { actor: "user:author", verb: "post", object: "note:1", foreign_id: "imp-1", time: old } },
      { feed: "not a feed", activity: { actor: "user:author", verb: "post", object: "note:2" } },
      { feed: "user:author", activity: { actor: "user:author", verb: "post", object: "note:3", foreign_id: "imp-3" } },
      { feed: "user:author", activity: { actor: "user:author", verb: "post", object: "note:4", foreign_id: "imp-4", time: "2021-05-06T07:08:09.000Z" } },
    ];
    const res = await http("POST", "/v1/batch/activities", { token: server, body: { activities: items } });
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(4);
    expect(res.body.results[0]).toEqual({ index: 0, ok: true, id: expect.any(String) });
    expect(res.body.results[1]).toEqual({ index: 1, ok: false, code: "VALIDATION_FAILED" });
    // foreign_id without time fails that item alone.
    expect(res.body.results[2]).toEqual({ index: 2, ok: false, code: "VALIDATION_FAILED" });
    expect(res.body.results[3]).toEqual({ index: 3, ok: true, id: expect.any(String) });
    const [first, , , fourth] = res.body.results as { id: string }[];

    const one = await http("GET", `/v1/activities/${first!.id}`, { token: server });
    expect(one.body.time).toBe(old);

    // Fan-out runs normally: the follower's timeline gets both.
    const timeline = await until(
      "both activities on the follower's timeline",
      async () => {
        const r = await http("GET", "/v1/feeds/timeline/reader", { token: server });
        return r.body.results.length === 2 ? r : undefined;
      },
      15_000,
    );
    expect(timeline.body.results.map((a: { id: string }) => a.id)).toEqual([fourth!.id, first!.id]);

    // No live head keys for batch writes (reads may rebuild heads; check before reading the origin).
    const redis = new Redis(inject("redisUrl"));
    try {
      const keys = await redis.keys(tenantRedisKey(t.id, "head", "user:author"));
      expect(keys).toEqual([]);
    } finally {
      redis.disconnect();
    }

    // A rerun with foreign_id and time answers the existing rows and fans out nothing again.
    const rerun = await http("POST", "/v1/batch/activities", { token: server, body: { activities: [items[0], items[3]] } });
    expect(rerun.body.results).toEqual([
      { index: 0, ok: true, id: first!.id },
      { index: 1, ok: true, id: fourth!.id },
    ]);
    await sleep(1000);
    const again = await http("GET", "/v1/feeds/timeline/reader", { token: server });
    expect(again.body.results).toHaveLength(2);

    // A deleted identity fails its item with CONFLICT.
    expect((await http("DELETE", `/v1/activities/${first!.id}`, { token: server })).status).toBe(204);
    const burned = await http("POST", "/v1/batch/activities", { token: server, body: { activities: [items[0]] } });
    expect(burned.body.results).toEqual([{ index: 0, ok: false, code: "CONFLICT" }]);
  });
});
