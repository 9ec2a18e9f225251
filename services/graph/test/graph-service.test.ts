import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, createLogger, fromRpcError, notFound, rootKeys, scope, type Caller } from "@feeds/kit";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";
import { createGraphService, type GraphServiceDeps } from "../src/routes.js";
import type { FollowDoc } from "../src/follow-repository.js";

// Unit rung: the graph service with its repositories replaced by in-memory stand-ins, served
// over Connect's in-memory router transport with the real plumbing.

function fakeRepository() {
  const edges = new Map<string, FollowDoc>();
  const limits: number[] = [];
  const copyLimits: number[] = [];
  const failAfterFirstBatch = { on: false };
  const create = async (t: string, source: string, target: string) => {
    const _id = `${t}/${source}/${target}`;
    const existing = edges.get(_id);
    if (existing) return { doc: existing, created: false };
    const doc = { _id, tenant_id: t, source_feed: source, target_feed: target, created_at: new Date() };
    edges.set(_id, doc);
    return { doc, created: true };
  };
  const writes: GraphServiceDeps["writes"] = {
    follow: async (t, source, target, copyLimit) => {
      copyLimits.push(copyLimit);
      return create(t, source, target);
    },
    unfollow: async (t, source, target) => edges.delete(`${t}/${source}/${target}`),
    importMany: async (t, list) => Promise.all(list.map(async (e) => ((await create(t, e.source, e.target)).created ? "created" : "existed"))),
  };
  const repo: GraphServiceDeps = {
    writes,
    // No cached follower sets here: every fan-out stream reads the edges (follower-sets.test.ts).
    followerSets: {
      stream: async function* (t, feed, batchSize) {
        const all = [...edges.values()].filter((e) => e.tenant_id === t && e.target_feed === feed).map((e) => e.source_feed);
        for (let i = 0; i < all.length; i += batchSize) {
          yield all.slice(i, i + batchSize);
          if (failAfterFirstBatch.on) throw notFound("the store went away mid-stream");
        }
      },
    },
    counts: { get: async () => null, followerCounts: async () => new Map(), popular: async () => [] },
    follows: {
      followersOf: async (t, feed, limit) => {
        limits.push(limit);
        return [...edges.values()].filter((e) => e.tenant_id === t && e.target_feed === feed).slice(0, limit + 1);
      },
      followsOf: async () => [],
      targetsOf: async () => [],
      edgesFrom: async () => [],
      followedAmong: async () => new Set(),
    },
  };
  return { repo, edges, limits, copyLimits, failAfterFirstBatch };
}

/** The service as `signer` reaches it: the gateway for most RPCs, the fan-out for the follower stream. */
function client(deps: GraphServiceDeps, signer: "gateway" | "feed-worker" = "gateway") {
  const log = createLogger({ LOG_LEVEL: "silent" }, "test");
  const transport = createLocalTransport(
    (router) => router.service(GraphService, createGraphService(deps)),
    log,
    createInternalAuth(rootKeys(randomBytes(32))),
    signer,
  );
  return createClient(GraphService, transport);
}

// Internal callers name themselves: a call without a caller is no longer taken for one.
const as = (caller: Caller = { kind: "system" }) => scope({ tenantId: "t1", caller });
const user = (userId: string) => as({ kind: "user", userId });
const ref = (group: string, id: string) => ({ group, id });

async function errorOf(p: Promise<unknown>) {
  try {
    await p;
    return { code: "OK", fields: [] as { path: string }[] };
  } catch (e) {
    return fromRpcError(e);
  }
}

describe("follow rules", () => {
  it("lets a user token act only from feeds whose id is its user id, in any group", async () => {
    const { repo, edges } = fakeRepository();
    const c = client(repo);
    expect((await c.follow({ source: ref("user", "alice"), target: ref("user", "bob") }, user("alice"))).created).toBe(true);
    expect((await c.follow({ source: ref("timeline", "alice"), target: ref("user", "bob") }, user("alice"))).created).toBe(true);
    expect((await errorOf(c.follow({ source: ref("user", "bob"), target: ref("user", "carol") }, user("alice")))).code).toBe("FORBIDDEN");
    expect((await errorOf(c.unfollow({ source: ref("user", "bob"), target: ref("user", "alice") }, user("alice")))).code).toBe("FORBIDDEN");
    expect((await c.follow({ source: ref("user", "bob"), target: ref("user", "carol") }, as({ kind: "server" }))).created).toBe(true);
    expect(edges.size).toBe(3);
  });

  it("answers the existing edge on a repeat, refuses self-follows, bad refs and copy limits over 1000", async () => {
    const { repo, copyLimits } = fakeRepository();
    const c = client(repo);
    const first = await c.follow({ source: ref("user", "a"), target: ref("user", "b") }, as());
    const again = await c.follow({ source: ref("user", "a"), target: ref("user", "b") }, as());
    expect(again.created).toBe(false);
    expect(again.follow).toEqual(first.follow);
    const self = await errorOf(c.follow({ source: ref("user", "a"), target: ref("user", "a") }, as()));
    expect(self.code).toBe("VALIDATION_FAILED");
    expect(self.fields.map((f) => f.path)).toEqual(["target"]);
    const bad = await errorOf(c.follow({ source: ref("us er", "a"), target: ref("user", "") }, as()));
    expect(bad.fields.map((f) => f.path)).toEqual(["source.group", "target.id"]);
    expect((await errorOf(c.follow({ target: ref("user", "b") }, as()))).fields.map((f) => f.path)).toEqual(["source"]);
    const tooMany = await errorOf(c.follow({ source: ref("user", "a"), target: ref("user", "c"), activityCopyLimit: 1001 }, as()));
    expect(tooMany.fields.map((f) => f.path)).toEqual(["activity_copy_limit"]);
    expect((await c.follow({ source: ref("user", "a"), target: ref("user", "c"), activityCopyLimit: 1000 }, as())).created).toBe(true);
    expect(copyLimits).toEqual([0, 0, 1000]);
    expect((await c.unfollow({ source: ref("user", "a"), target: ref("user", "b") }, as())).removed).toBe(true);
    expect((await c.unfollow({ source: ref("user", "a"), target: ref("user", "b") }, as())).removed).toBe(false);
  });

  it("pages followers by up to 1000 for internal callers only", async () => {
    const { repo, limits } = fakeRepository();
    const c = client(repo);
    const feed = ref("user", "x");
    await c.listFollowers({ feed, page: { limit: 1000 } }, as());
    await c.listFollowers({ feed, page: {} }, as());
    await c.listFollowers({ feed, page: { limit: 100 } }, as({ kind: "server" }));
    expect(limits).toEqual([1000, 20, 100]);
    expect((await errorOf(c.listFollowers({ feed, page: { limit: 1001 } }, as()))).code).toBe("VALIDATION_FAILED");
    expect((await errorOf(c.listFollowers({ feed, page: { limit: 101 } }, as({ kind: "server" })))).code).toBe("VALIDATION_FAILED");
    expect((await errorOf(c.listFollowers({ feed, page: { limit: 101 } }, user("x")))).code).toBe("VALIDATION_FAILED");
    expect((await errorOf(c.listFollowers({ feed, page: { cursor: "not a cursor" } }, as()))).fields.map((f) => f.path)).toEqual(["next"]);
  });

  it("streams every follower feed in batches, to internal callers only", async () => {
    const { repo, failAfterFirstBatch } = fakeRepository();
    const c = client(repo);
    const feed = ref("user", "x");
    for (let i = 0; i < 7; i++) await c.follow({ source: ref("timeline", `f${i}`), target: feed }, as());
    await c.follow({ source: ref("timeline", "other"), target: ref("user", "y") }, as());
    const fanout = client(repo, "feed-worker");
    const batches: string[][] = [];
    for await (const b of fanout.streamFollowerFeeds({ feed, batchSize: 3 }, as())) batches.push(b.feeds);
    expect(batches.map((b) => b.length)).toEqual([3, 3, 1]);
    expect(batches.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `timeline:f${i}`));
    const drain = async (req: Parameters<typeof c.streamFollowerFeeds>[0], opts = as()) => {
      for await (const _ of fanout.streamFollowerFeeds(req, opts)) void _;
    };
    expect((await errorOf(drain({ feed, batchSize: 1001 }))).fields.map((f) => f.path)).toEqual(["batch_size"]);
    expect((await errorOf(drain({ feed }, as({ kind: "server" })))).code).toBe("FORBIDDEN");
    expect((await errorOf(drain({ feed: ref("bad group", "x") }))).code).toBe("VALIDATION_FAILED");
    // An error while the stream is being read keeps its code through the plumbing.
    failAfterFirstBatch.on = true;
    expect((await errorOf(drain({ feed, batchSize: 3 }))).code).toBe("NOT_FOUND");
  });

  it("imports per item: duplicates ok, bad refs and self-follows fail alone", async () => {
    const { repo, edges } = fakeRepository();
    const c = client(repo);
    const res = await c.importFollows(
      {
        follows: [
          { source: ref("user", "a"), target: ref("user", "b") },
          { source: ref("user", "a"), target: ref("user", "b") },
          { source: ref("user", "a"), target: ref("user", "a") },
          { source: ref("user", "a") },
          { source: ref("user", "a"), target: ref("bad group", "b") },
        ],
      },
      as({ kind: "server" }),
    );
    expect(res.results.map((r) => [r.index, r.ok, r.code])).toEqual([
      [0, true, ""],
      [1, true, ""],
      [2, false, "VALIDATION_FAILED"],
      [3, false, "VALIDATION_FAILED"],
      [4, false, "VALIDATION_FAILED"],
    ]);
    expect(edges.size).toBe(1);
    expect((await errorOf(c.importFollows({ follows: [] }, user("a")))).code).toBe("FORBIDDEN");
  });
});
