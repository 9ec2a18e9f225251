import { describe, expect, it } from "vitest";
import { createLogger, type FeedEvent } from "@feeds/kit";
import type { Counter } from "../src/counter.js";
import { createFollowEventConfirm } from "../src/follow-events.js";
import type { FollowDoc } from "../src/follow-repository.js";
import { createFollowWrites, type FollowWritesDeps } from "../src/follow-writes.js";
import type { NewPending, PendingDoc } from "../src/pending-repository.js";

// Unit rung: which follow events an edge change publishes, and with what, with the edges, the
// outbox and the queue replaced by in-memory stand-ins.

const log = createLogger({ LOG_LEVEL: "silent" }, "test");

function setUp(opts: { failPublish?: boolean } = {}) {
  const edges = new Map<string, FollowDoc>();
  const records = new Map<string, PendingDoc>();
  const published: FeedEvent[] = [];
  const marked: { id: string; happened?: boolean }[] = [];
  const key = (t: string, s: string, g: string) => `${t}/${s}/${g}`;
  let n = 0;
  const follows = {
    async insert(t: string, s: string, g: string, at = new Date()) {
      const existing = edges.get(key(t, s, g));
      if (existing) return { doc: existing, created: false };
      const doc = { _id: key(t, s, g), tenant_id: t, source_feed: s, target_feed: g, created_at: at };
      edges.set(doc._id, doc);
      return { doc, created: true };
    },
    insertMany: async (t: string, list: { source: string; target: string }[]) =>
      Promise.all(list.map(async (e) => ((await follows.insert(t, e.source, e.target)).created ? ("created" as const) : ("existed" as const)))),
    remove: async (t: string, s: string, g: string) => edges.delete(key(t, s, g)),
    find: async (t: string, s: string, g: string) => edges.get(key(t, s, g)) ?? null,
  };
  const pending = {
    async insert(p: NewPending): Promise<PendingDoc> {
      const doc = { _id: `p${n++}`, ...p, at: new Date() };
      records.set(doc._id, doc);
      return doc;
    },
    markCounted: async (id: string, happened?: boolean) => void marked.push({ id, happened }),
    done: async (id: string) => void records.delete(id),
    setEvents: async (id: string, events: FeedEvent[]) => void Object.assign(records.get(id) ?? {}, { events }),
  } as unknown as FollowWritesDeps["pending"];
  const counter = {
    apply: async <T>(_t: string, _f: readonly string[], write: () => Promise<{ result: T }>) => (await write()).result,
    recount: async () => undefined,
  } as unknown as Counter;
  const writes = createFollowWrites({
    follows,
    counts: { getMany: async () => new Map() },
    pending,
    counter,
    tasks: { publish: async () => undefined },
    publishEvents: async (events) => {
      if (opts.failPublish) throw new Error("NATS is down");
      published.push(...events);
    },
    followerSets: { invalidate: async () => undefined },
    log,
  });
  return { writes, published, records, marked, confirm: createFollowEventConfirm(follows) };
}

describe("follow events", () => {
  it("follow.created for a new edge only, with the Follow as data and the edge's created_at", async () => {
    const { writes, published, records } = setUp();
    const { doc } = await writes.follow("t1", "timeline:bob", "user:alice", 0);
    await writes.follow("t1", "timeline:bob", "user:alice", 5);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({
      type: "follow.created",
      tenant_id: "t1",
      created_at: doc.created_at.toISOString(),
      data: { source_group: "timeline", source_id: "bob", target_group: "user", target_id: "alice", created_at: doc.created_at.toISOString() },
    });
    expect(records.size).toBe(0);
  });

  it("follow.deleted when an edge goes (data: the edge removed), none for an unfollow of no edge or a batch import", async () => {
    const { writes, published } = setUp();
    const { doc } = await writes.follow("t1", "user:bob", "user:alice", 0);
    published.length = 0;
    expect(await writes.unfollow("t1", "user:bob", "user:alice", false)).toBe(true);
    expect(await writes.unfollow("t1", "user:bob", "user:alice", false)).toBe(false);
    await writes.importMany("t1", [{ source: "user:carol", target: "user:alice" }]);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({
      type: "follow.deleted",
      data: { source_group: "user", source_id: "bob", target_group: "user", target_id: "alice", created_at: doc.created_at.toISOString() },
    });
    expect(Date.parse(published[0]?.created_at ?? "")).toBeGreaterThanOrEqual(doc.created_at.getTime());
  });

  it("a writer that cannot publish leaves its word on the record: events of a change that happened go out unasked, of one that did not, never", async () => {
    const { writes, records, marked } = setUp({ failPublish: true });
    await writes.follow("t1", "user:bob", "user:alice", 0);
    await writes.follow("t1", "user:bob", "user:alice", 0);
    expect(marked.map((m) => m.happened)).toEqual([true]);
    // The repeat (no edge change, no history task) left nothing behind.
    expect([...records.values()].map((r) => r.events?.map((e) => e.type))).toEqual([["follow.created"]]);
  });

  it("the relay's confirmation tells this very edge from another one between the same feeds", async () => {
    const { writes, published, confirm } = setUp();
    await writes.follow("t1", "user:bob", "user:alice", 0);
    const created = published[0] as FeedEvent;
    expect(await confirm(created)).toBe(true);
    await writes.unfollow("t1", "user:bob", "user:alice", true);
    const deleted = published[1] as FeedEvent;
    expect(await confirm(created)).toBe(false);
    expect(await confirm(deleted)).toBe(true);
    await new Promise((r) => setTimeout(r, 2));
    await writes.follow("t1", "user:bob", "user:alice", 0);
    // A newer edge: the old follow.created is not its event, and the unfollow did happen.
    expect(await confirm(created)).toBe(false);
    expect(await confirm(deleted)).toBe(true);
  });
});
