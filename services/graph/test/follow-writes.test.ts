import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, type FeedEvent, type Nats, type Outbox } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { createCountRepository, type CountDoc } from "../src/count-repository.js";
import { createFollowRepository, type FollowDoc } from "../src/follow-repository.js";
import { createFollowWrites, FOLLOWS, type FollowWritesDeps } from "../src/follow-writes.js";
import { historyTasks, type HistoryTask } from "../src/tasks.js";

// Edge changes against real storage and JetStream: what a follow and an unfollow write and
// publish, and what the outbox relay does with a change whose writer died at each step: counts
// move exactly once, the messages go out once (JetStream drops a repeat of a message id), and
// the bookkeeping (pending change, applied ids) is gone afterwards.

describe("follow writes", { timeout: 60_000 }, () => {
  const env = createTestEnv("graph_writes", { db: true, nats: { queues: ["fanout", "notify"] } });
  beforeAll(async () => {
    await env.open();
    await Promise.all([createFollowRepository(env.db).ensureIndexes(), createCountRepository(env.db).ensureIndexes()]);
  });
  afterAll(env.close);

  let tenants = 0;
  /** A tenant of the test's own: messages and documents are told apart by it. */
  const newTenant = () => `t${++tenants}`;

  /** Invalidated follower sets, per tenant. */
  const invalidated: string[] = [];

  /** The graph's writes as one process has them; `crash` throws at a step (the process "died" there). */
  function writer(opts: { graceMs?: number; crash?: "counts" | "settle" | "publish" | "clear" } = {}) {
    const died = () => new Error("the writer died here");
    const follows = createFollowRepository(env.db);
    const counts = createCountRepository(env.db);
    const nats: Nats =
      opts.crash === "publish"
        ? {
            ...env.nats,
            js: new Proxy(env.nats.js, {
              get: (target, p) => (p === "publish" ? () => Promise.reject(died()) : (Reflect.get(target, p) as unknown)),
            }),
          }
        : env.nats;
    const outbox: Outbox = createOutbox({ db: env.db, nats, log: env.log, graceMs: opts.graceMs ?? 60_000 });
    const deps: FollowWritesDeps = {
      follows,
      counts: opts.crash === "counts" ? { apply: () => Promise.reject(died()), hold: (t, f, c) => counts.hold(t, f, c) } : counts,
      outbox:
        opts.crash === "settle"
          ? { ...outbox, settle: () => Promise.reject(died()) }
          : opts.crash === "clear"
            ? { ...outbox, settle: (c, id, change) => outbox.settle(c, id, change, { clear: false }) }
            : outbox,
      nats,
      tasks: historyTasks(env.nats),
      followerSets: { invalidate: async (t, feeds) => void invalidated.push(...feeds.map((f) => `${t}/${f}`)) },
      log: env.log,
      ...(opts.graceMs !== undefined ? { graceMs: opts.graceMs } : {}),
    };
    const writes = createFollowWrites(deps);
    outbox.register(FOLLOWS, (doc, change) => writes.finish(doc as FollowDoc, change));
    return { writes, outbox, follows };
  }

  /** The relay of another process, finishing at once what is pending. */
  const relay = () => writer({ graceMs: 0 }).outbox;

  const countsOf = async (t: string, feed: string) => {
    const d = await env.db.collection<CountDoc>("follow_counts").findOne({ _id: `${t}/${feed}` });
    return { followers: d?.follower_count ?? 0, following: d?.following_count ?? 0, applied: d?.applied ?? [] };
  };

  /** Every message on `queue`'s `sub` subject of tenant `t` so far (the streams have no consumer here). */
  async function messages(queue: "fanout" | "notify", sub: string, t: string): Promise<unknown[]> {
    const stream = env.nats.stream(queue);
    const subject = env.nats.subject(queue, sub);
    const { state } = await env.nats.jsm.streams.info(stream);
    const out: unknown[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
      const m = await env.nats.jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (m?.subject !== subject) continue;
      const v = JSON.parse(new TextDecoder().decode(m.data)) as { t?: string; tenant_id?: string };
      if ((v.t ?? v.tenant_id) === t) out.push(v);
    }
    return out;
  }
  const events = async (t: string) => ((await messages("notify", "event", t)) as FeedEvent[]).map((e) => e.type);
  const tasks = async (t: string) => ((await messages("fanout", "follow", t)) as HistoryTask[]).map((x) => `${x.k}${x.n ?? ""} ${x.s}>${x.g}`);
  const edge = (t: string, s: string, g: string) => env.db.collection<FollowDoc>("follows").findOne({ _id: `${t}/${s}/${g}` });

  it("a follow writes the edge and both counts once, publishes its copy task and follow.created; a repeat moves nothing and copies again", async () => {
    const t = newTenant();
    const { writes, outbox } = writer();
    const first = await writes.follow(t, "timeline:a", "user:b", 5);
    expect(first.created).toBe(true);
    const again = await writes.follow(t, "timeline:a", "user:b", 2);
    expect(again.created).toBe(false);
    expect(again.doc.created_at).toEqual(first.doc.created_at);
    expect(await writes.follow(t, "timeline:a", "user:b", 0)).toMatchObject({ created: false });
    await outbox.flush();
    expect(await countsOf(t, "user:b")).toEqual({ followers: 1, following: 0, applied: [] });
    expect(await countsOf(t, "timeline:a")).toEqual({ followers: 0, following: 1, applied: [] });
    expect(await events(t)).toEqual(["follow.created"]);
    expect(await tasks(t)).toEqual(["copy5 timeline:a>user:b", "copy2 timeline:a>user:b"]);
    // Nothing pending is left on the edge; it keeps the last copy limit (a removal racing a new follow copies again with it).
    expect(await edge(t, "timeline:a", "user:b")).toEqual({ _id: `${t}/timeline:a/user:b`, tenant_id: t, source_feed: "timeline:a", target_feed: "user:b", created_at: first.doc.created_at, copy_limit: 2 });
    expect(invalidated).toEqual(expect.arrayContaining([`${t}/timeline:a`, `${t}/user:b`]));
  });

  it("an unfollow moves both counts back, publishes its removal task and follow.deleted of that edge, and deletes it; no edge, no change", async () => {
    const t = newTenant();
    const { writes, outbox } = writer();
    const { doc } = await writes.follow(t, "user:a", "user:b", 0);
    await writes.follow(t, "user:a", "user:c", 0);
    expect(await writes.unfollow(t, "user:a", "user:b", false)).toBe(true);
    expect(await writes.unfollow(t, "user:a", "user:b", false)).toBe(false);
    expect(await writes.unfollow(t, "user:a", "user:c", true)).toBe(true);
    await outbox.flush();
    expect(await edge(t, "user:a", "user:b")).toBeNull();
    expect(await countsOf(t, "user:a")).toEqual({ followers: 0, following: 0, applied: [] });
    expect(await countsOf(t, "user:b")).toEqual({ followers: 0, following: 0, applied: [] });
    expect(await events(t)).toEqual(["follow.created", "follow.created", "follow.deleted", "follow.deleted"]);
    const deleted = ((await messages("notify", "event", t)) as FeedEvent[])[2];
    expect(deleted?.data).toEqual({ source_group: "user", source_id: "a", target_group: "user", target_id: "b", created_at: doc.created_at.toISOString() });
    expect(Date.parse(deleted?.created_at ?? "")).toBeGreaterThanOrEqual(doc.created_at.getTime());
    // keep_history: no removal task.
    expect(await tasks(t)).toEqual(["remove user:a>user:b"]);
  });

  it("a follow whose writer died after the edge insert is finished by the relay exactly once", async () => {
    const t = newTenant();
    await expect(writer({ crash: "counts" }).writes.follow(t, "timeline:x", "user:y", 3)).rejects.toThrow("died");
    // Died: the edge shows (its change pending), the counts do not, nothing was published.
    expect((await edge(t, "timeline:x", "user:y"))?.outbox).toHaveLength(1);
    expect(await countsOf(t, "user:y")).toMatchObject({ followers: 0 });
    expect(await events(t)).toEqual([]);
    const r = relay();
    invalidated.length = 0;
    expect(await r.relayOnce()).toBe(1);
    expect(await r.relayOnce()).toBe(0);
    await r.flush();
    expect(await countsOf(t, "user:y")).toEqual({ followers: 1, following: 0, applied: [] });
    expect(await countsOf(t, "timeline:x")).toEqual({ followers: 0, following: 1, applied: [] });
    expect(await events(t)).toEqual(["follow.created"]);
    expect(await tasks(t)).toEqual(["copy3 timeline:x>user:y"]);
    expect(invalidated).toEqual(expect.arrayContaining([`${t}/timeline:x`, `${t}/user:y`]));
    expect(await edge(t, "timeline:x", "user:y")).not.toHaveProperty("outbox");
  });

  it("a follow whose increments were made but whose clear never ran: the relay counts nothing twice", async () => {
    const t = newTenant();
    // Died after the counts, before publishing; then one that published but never cleared.
    await expect(writer({ crash: "settle" }).writes.follow(t, "timeline:x", "user:y", 3)).rejects.toThrow("died");
    const w = writer({ crash: "clear" });
    await w.writes.follow(t, "timeline:z", "user:y", 0);
    expect(await countsOf(t, "user:y")).toMatchObject({ followers: 2 });
    const r = relay();
    await r.relayOnce();
    await r.relayOnce();
    await Promise.all([r.flush(), w.outbox.flush()]);
    expect(await countsOf(t, "user:y")).toEqual({ followers: 2, following: 0, applied: [] });
    expect(await countsOf(t, "timeline:x")).toEqual({ followers: 0, following: 1, applied: [] });
    expect(await countsOf(t, "timeline:z")).toEqual({ followers: 0, following: 1, applied: [] });
    // The writer's publish and the relay's are one message each.
    expect(await events(t)).toEqual(["follow.created", "follow.created"]);
    expect(await tasks(t)).toEqual(["copy3 timeline:x>user:y"]);
  });

  it("an unfollow whose writer died after marking the edge, or after its decrements: the relay finishes it once and deletes the edge", async () => {
    const t = newTenant();
    const w = writer();
    for (const s of ["user:p", "user:q"]) await w.writes.follow(t, s, "user:star", 0);
    await w.outbox.flush();
    expect(await writer({ crash: "counts" }).writes.unfollow(t, "user:p", "user:star", false).catch(String)).toMatch("died");
    expect(await writer({ crash: "publish" }).writes.unfollow(t, "user:q", "user:star", false)).toBe(true);
    // Gone for every read at once, though the documents wait for the relay.
    expect(await w.follows.followersOf(t, "user:star", 10, null)).toEqual([]);
    expect(await w.follows.live(t, "user:q", "user:star")).toBeNull();
    expect(await countsOf(t, "user:star")).toMatchObject({ followers: 1 });
    const r = relay();
    expect(await r.relayOnce()).toBe(2);
    expect(await r.relayOnce()).toBe(0);
    await r.flush();
    expect(await edge(t, "user:p", "user:star")).toBeNull();
    expect(await edge(t, "user:q", "user:star")).toBeNull();
    expect(await countsOf(t, "user:star")).toEqual({ followers: 0, following: 0, applied: [] });
    expect(await countsOf(t, "user:p")).toEqual({ followers: 0, following: 0, applied: [] });
    expect(await countsOf(t, "user:q")).toEqual({ followers: 0, following: 0, applied: [] });
    expect((await events(t)).sort()).toEqual(["follow.created", "follow.created", "follow.deleted", "follow.deleted"]);
    expect((await tasks(t)).sort()).toEqual(["remove user:p>user:star", "remove user:q>user:star"]);
  });

  it("an unfollow of an edge whose follow writer died before counting it: the follow is counted first, then undone", async () => {
    const t = newTenant();
    await expect(writer({ crash: "counts", graceMs: 0 }).writes.follow(t, "user:a", "user:b", 0)).rejects.toThrow("died");
    const w = writer({ graceMs: 0 });
    expect(await w.writes.unfollow(t, "user:a", "user:b", true)).toBe(true);
    await w.outbox.flush();
    // Counted once, undone once. (This writer's grace is 0, so its clears are past it: kit leaves
    // the change ids on the counts then, where they only keep a replay from counting again.)
    expect(await countsOf(t, "user:b")).toMatchObject({ followers: 0, following: 0 });
    expect(await countsOf(t, "user:a")).toMatchObject({ followers: 0, following: 0 });
    expect(await events(t)).toEqual(["follow.created", "follow.deleted"]);
    expect(await edge(t, "user:a", "user:b")).toBeNull();
  });

  it("a batch import counts each new edge once, quietly; repeats and existing edges count nothing", async () => {
    const t = newTenant();
    const { writes, outbox } = writer();
    await writes.follow(t, "user:s0", "user:hub", 0);
    const items = [...Array.from({ length: 5 }, (_, i) => ({ source: `user:s${i}`, target: "user:hub" })), { source: "user:s1", target: "user:hub" }];
    expect(await writes.importMany(t, items)).toEqual(["existed", "created", "created", "created", "created", "existed"]);
    // A rerun: every edge exists, nothing to count.
    expect(await writes.importMany(t, items)).toEqual(["existed", "existed", "existed", "existed", "existed", "existed"]);
    await outbox.flush();
    expect(await countsOf(t, "user:hub")).toEqual({ followers: 5, following: 0, applied: [] });
    expect(await countsOf(t, "user:s3")).toEqual({ followers: 0, following: 1, applied: [] });
    expect(await events(t)).toEqual(["follow.created"]);
  });

  it("concurrent follows, repeats and unfollows of the same edges through two writers: counts equal the edges", async () => {
    const t = newTenant();
    const a = writer();
    const b = writer();
    const sources = Array.from({ length: 8 }, (_, i) => `user:s${i}`);
    const targets = ["user:t0", "user:t1", "user:hot"];
    const ops: Promise<unknown>[] = [];
    for (const [i, s] of sources.entries()) {
      for (const g of targets) {
        const [x, y] = i % 2 ? [a, b] : [b, a];
        ops.push(x.writes.follow(t, s, g, 0), y.writes.follow(t, s, g, 0), x.writes.unfollow(t, s, g, true), y.writes.follow(t, s, g, 0), y.writes.unfollow(t, s, g, true));
        if (g === "user:hot") ops.push(x.writes.follow(t, s, g, 0));
      }
    }
    await Promise.all(ops);
    await Promise.all([a.outbox.flush(), b.outbox.flush()]);
    const edges = await env.db.collection<FollowDoc>("follows").find({ tenant_id: t, removing: { $exists: false } }).toArray();
    const wrong: string[] = [];
    for (const feed of [...sources, ...targets]) {
      const c = await countsOf(t, feed);
      const want = { followers: edges.filter((e) => e.target_feed === feed).length, following: edges.filter((e) => e.source_feed === feed).length };
      if (c.followers !== want.followers || c.following !== want.following) wrong.push(`${feed}: counts ${c.followers}/${c.following}, edges ${want.followers}/${want.following}`);
    }
    expect(wrong).toEqual([]);
    expect(await env.db.collection("follows").countDocuments({ tenant_id: t, outbox_pending: true })).toBe(0);
  });
});
