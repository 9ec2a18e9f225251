import { randomBytes, randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, markWatched, newEvent, ownerWatchName, rootKeys, scope, type Clients } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { NotificationService } from "@feeds/proto/feeds/notification/v1/notification";
import { COUNTS, countsKey } from "../src/notifications/counts.js";
import { GROUPS, groupTarget } from "../src/notifications/group-repository.js";
import { createNotifications, type NotificationAdded } from "../src/notifications/index.js";
import type { NotificationDoc } from "../src/notifications/notification-repository.js";

// Notification groups counted once per member notification, against real MongoDB-wire storage:
// a notification stored again (a redelivered event) counts nothing twice, a writer that died after
// its insert is finished by the relay once, and one that died after counting is not counted again.

const peers = () => ({ users: { getUsers: async () => ({ users: [] }) } }) as unknown as Pick<Clients, "users">;

describe("notification groups, once per member", { timeout: 60_000 }, () => {
  // Each command as "<name> <collection>" (the group heads' reads are counted).
  const commands: string[] = [];
  const env = createTestEnv("notify_groups", { db: { onCommand: (e) => void commands.push(`${e.commandName} ${String(e.command[e.commandName])}`) }, nats: true, redis: true });
  beforeAll(env.open);
  afterAll(env.close);

  const setUp = async (graceMs = { inserts: 300, marks: 300 }) => {
    // Relays on demand (relayOnce), graces short enough for a test to outwait them.
    const n = await createNotifications({ db: env.db, nats: env.nats, redis: env.redis, peers, log: env.log, graceMs });
    const transport = createLocalTransport((r) => r.service(NotificationService, n.service), env.log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
    const client = createClient(NotificationService, transport);
    const tenant = `t${randomBytes(4).toString("hex")}`;
    const as = scope({ tenantId: tenant, caller: { kind: "server" } });
    const activity = randomUUID();
    const groups = async (owner: string) => {
      const page = await client.listNotificationGroups({ owner, page: { limit: 100 } }, as);
      return page.groups.map((g) => [Number(g.activityCount), Number(g.actorCount)]);
    };
    const doc = (owner: string, actor: string): NotificationDoc => ({
      _id: randomUUID(),
      tenant_id: tenant,
      owner,
      verb: "react",
      actor: `user:${actor}`,
      object: activity,
      reaction_kind: "like",
      activity_id: null,
      parent_id: null,
      created_at: new Date(),
      seen_at: null,
      read_at: null,
    });
    /** What a worker leaves when it dies right after its insert: the grouped record with its pending change. */
    const diedAfterInsert = async (d: NotificationDoc, groupKey: string) => {
      const targets = [{ collection: COUNTS, id: countsKey(tenant, d.owner) }, groupTarget(groupKey)];
      const change = { id: d._id, at: new Date(), messages: [], targets, data: { unseen: 1, unread: 1 } };
      await env.db.collection<NotificationDoc>("notifications").insertOne({ ...d, group_key: groupKey, outbox: [change], outbox_pending: true });
      return change;
    };
    return { n, tenant, groups, doc, diedAfterInsert };
  };

  it("a notification stored three times at once counts once in its group", async () => {
    const { n, groups, doc } = await setUp();
    const d = doc("ann", "bob");
    const added = await Promise.all([0, 1, 2].map(() => n.changesForTests.add({ ...d })));
    expect(added.filter((a) => a !== null)).toHaveLength(1);
    await n.changesForTests.add(doc("ann", "bob"));
    await n.changesForTests.add(doc("ann", "cat"));
    expect(await groups("ann")).toEqual([[3, 2]]);
  });

  it("members within their group's window join it without reading its head again (the process keeps it)", async () => {
    const { n, groups, doc } = await setUp();
    commands.length = 0;
    const first = await n.changesForTests.add(doc("jo", "u0"));
    for (let i = 1; i < 5; i++) await n.changesForTests.add(doc("jo", `u${i}`));
    expect(await groups("jo")).toEqual([[5, 5]]);
    expect(first?.notification.group_key).toMatch(/^[0-9a-f]{32}$/);
    // The first member read the head (none) and opened it; the four after it read nothing.
    expect(commands.filter((c) => c === "find notification_group_heads")).toHaveLength(1);
  });

  it("a redelivered event of a stored notification changes no group", async () => {
    const { n, tenant, groups } = await setUp();
    const at = new Date();
    const event = newEvent("reaction.added", tenant, { id: randomUUID(), activity_id: randomUUID(), user_id: "bob", kind: "like", created_at: at.toISOString() }, { at, meta: { activity_actor: "user:ann", actor: "user:bob" } });
    await n.handler(event, { redelivered: false });
    await n.handler(event, { redelivered: true });
    await n.handler(event, { redelivered: false });
    expect(await groups("ann")).toEqual([[1, 1]]);
  });

  it("a writer that died after its insert is counted in its group by the relay, once", async () => {
    const { n, groups, doc, diedAfterInsert } = await setUp();
    const first = await n.changesForTests.add(doc("dora", "bob"));
    const key = first?.notification.group_key ?? "";
    await diedAfterInsert(doc("dora", "cat"), key);
    expect(await groups("dora")).toEqual([[1, 1]]);
    await n.flush();
    await new Promise((r) => setTimeout(r, 400));
    expect(await n.relayOnce()).toBe(1);
    expect(await n.relayOnce()).toBe(0);
    expect(await groups("dora")).toEqual([[2, 2]]);
    // The change is cleared from the group once the relay is done with it.
    await n.flush();
    const g = await env.db.collection<{ _id: string; applied?: string[] }>(GROUPS).findOne({ _id: key });
    expect(g?.applied ?? []).toEqual([]);
  });

  it("a writer that died after counting its group, before clearing its change, is not counted again by the relay", async () => {
    const { n, groups, doc, diedAfterInsert } = await setUp();
    const first = await n.changesForTests.add(doc("fred", "bob"));
    const key = first?.notification.group_key ?? "";
    const d = { ...doc("fred", "cat"), group_key: key };
    const change = await diedAfterInsert(d, key);
    // The writer's own increments (what the relay would replay), then it died.
    await n.changesForTests.finishNotification(d, change);
    expect(await groups("fred")).toEqual([[2, 2]]);
    await new Promise((r) => setTimeout(r, 400));
    expect(await n.relayOnce()).toBe(1);
    expect(await n.relayOnce()).toBe(0);
    expect(await groups("fred")).toEqual([[2, 2]]);
  });

  /** The owner's unseen and unread groups as the records say: a group is unseen while any member is. */
  const fromRecords = async (tenant: string, owner: string) => {
    const col = env.db.collection<NotificationDoc>("notifications");
    const [unseen, unread] = await Promise.all([
      col.distinct("group_key", { tenant_id: tenant, owner, seen_at: null }),
      col.distinct("group_key", { tenant_id: tenant, owner, read_at: null }),
    ]);
    return { unseen: unseen.length, unread: unread.length };
  };

  it("the owner's unseen and unread groups, kept by counts, equal the records' through concurrent adds and marks of every kind", async () => {
    // No relay here: graces long enough that every writer's clear also takes its ids off the
    // groups (a clear later than the grace leaves them, for a relay that may still replay it).
    const { n, tenant, doc } = await setUp({ inserts: 60_000, marks: 60_000 });
    const client = createClient(NotificationService, createLocalTransport((r) => r.service(NotificationService, n.service), env.log, createInternalAuth(rootKeys(randomBytes(32))), "gateway"));
    const as = scope({ tenantId: tenant, caller: { kind: "server" } });
    const state = async () => {
      const page = await client.listNotificationGroups({ owner: "gil", page: { limit: 100 } }, as);
      return { unseen: Number(page.unseen), unread: Number(page.unread), groups: page.groups.map((g) => [g.groupKey, g.seenAt === undefined, g.readAt === undefined]) };
    };
    // Six groups (one per activity), members added while marks of each kind run beside them.
    const activities = Array.from({ length: 6 }, () => randomUUID());
    const member = (i: number) => ({ ...doc("gil", `u${i}`), object: activities[i % 6] as string });
    const first = await Promise.all(Array.from({ length: 12 }, (_, i) => n.changesForTests.add(member(i))));
    const keys = [...new Set(first.map((a) => a?.notification.group_key ?? ""))];
    expect(keys).toHaveLength(6);
    const ids = first.map((a) => a?.notification._id ?? "");
    await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => n.changesForTests.add(member(12 + i))),
      n.changesForTests.mark(tenant, "gil", [ids[0] as string, ids[6] as string], null),
      n.changesForTests.mark(tenant, "gil", null, { groups: [keys[1] as string] }),
      n.changesForTests.mark(tenant, "gil", { groups: [keys[2] as string, keys[3] as string] }, null),
    ]);
    const after = await state();
    expect({ unseen: after.unseen, unread: after.unread }).toEqual(await fromRecords(tenant, "gil"));
    await n.changesForTests.mark(tenant, "gil", "all", null);
    expect((await state()).unseen).toBe(0);
    expect(await fromRecords(tenant, "gil")).toMatchObject({ unseen: 0 });
    await n.changesForTests.add(member(30));
    const one = await state();
    expect(one).toMatchObject({ unseen: 1, unread: (await fromRecords(tenant, "gil")).unread });
    expect(one.groups.filter(([, unseen]) => unseen)).toHaveLength(1);
    await n.changesForTests.mark(tenant, "gil", "all", "all");
    expect(await state()).toMatchObject({ unseen: 0, unread: 0 });
    // Every mark's id leaves the groups' applied lists once settled.
    await n.flush();
    const held = await env.db.collection<{ _id: string; applied?: string[] }>(GROUPS).find({ _id: { $in: keys } }).toArray();
    expect(held.flatMap((g) => g.applied ?? [])).toEqual([]);
  });

  it("a mark that stamps a member before its group counted it (writer died after the insert) is taken once: the group ends seen", async () => {
    const { n, tenant, doc, diedAfterInsert } = await setUp();
    // A member of a group nobody stored yet: its writer died right after the insert.
    const d = doc("hal", "bob");
    const key = "ab".repeat(16);
    await diedAfterInsert(d, key);
    await n.changesForTests.mark(tenant, "hal", "all", null);
    const stored = () => env.db.collection<{ _id: string; unseen?: number; unread?: number; activity_count?: number; owner?: string }>(GROUPS).findOne({ _id: key });
    // The mark stored the group from its member, with the mark's part (-1) in it.
    expect(await stored()).toMatchObject({ owner: "hal", unseen: -1, unread: 0, activity_count: 0 });
    await n.flush();
    await new Promise((r) => setTimeout(r, 400));
    expect(await n.relayOnce()).toBe(1);
    expect(await stored()).toMatchObject({ unseen: 0, unread: 1, activity_count: 1 });
    expect(await n.countsForTests.get(tenant, "hal")).toMatchObject({ unseen: 0, unread: 1 });
    expect(await fromRecords(tenant, "hal")).toEqual({ unseen: 0, unread: 1 });
  });

  it("a mark whose writer could not settle it is finished by the relay: its group part taken once, then its id cleared from the groups", async () => {
    const { n, tenant, doc } = await setUp();
    const a = await n.changesForTests.add(doc("ida", "bob"));
    await n.changesForTests.add(doc("ida", "cat"));
    const key = a?.notification.group_key ?? "";
    // A writer whose live publish fails (NATS gone) leaves the mark's change pending for the relay
    // (a publish it makes only while a stream watches the owner: marked as a stream would).
    await markWatched(env.nats, env.redis, tenant, [ownerWatchName("ida")], 60_000);
    const down = new Proxy(env.nats.js, { get: (t, k): unknown => (k === "publish" ? async () => Promise.reject(new Error("NATS down (test)")) : Reflect.get(t, k)) });
    const writer = await createNotifications({ db: env.db, nats: { ...env.nats, js: down }, redis: env.redis, peers, log: env.log, graceMs: { inserts: 300, marks: 300 } });
    await writer.changesForTests.mark(tenant, "ida", [a?.notification._id ?? ""], null);
    const group = () => env.db.collection<{ _id: string; unseen?: number; applied?: string[] }>(GROUPS).findOne({ _id: key });
    expect(await group()).toMatchObject({ unseen: 1, unread: 2 });
    const countsDoc = await env.db.collection(COUNTS).findOne({ _id: countsKey(tenant, "ida") as never });
    const change = (countsDoc?.outbox as { id: string }[] | undefined)?.[0];
    expect(change).toBeDefined();
    // Finished again (as a relay would, the writer's part done): nothing is taken twice.
    await n.changesForTests.finishMark(countsDoc as never, change as never);
    expect(await group()).toMatchObject({ unseen: 1, unread: 2 });
    await new Promise((r) => setTimeout(r, 400));
    expect(await n.relayOnce()).toBe(1);
    await n.flush();
    expect(await group()).toMatchObject({ unseen: 1, unread: 2, applied: [] });
    expect(await n.countsForTests.get(tenant, "ida")).toMatchObject({ unseen: 1, unread: 2 });
  });

  it("onAdded hears of each new notification once, with its counts and its group summary (the stream's notification.added)", async () => {
    const heard: NotificationAdded[] = [];
    const n = await createNotifications({ db: env.db, nats: env.nats, redis: env.redis, peers, log: env.log, onAdded: async (a) => void heard.push(a) });
    const tenant = `t${randomBytes(4).toString("hex")}`;
    const activity = randomUUID();
    const like = (by: string) => {
      const at = new Date();
      const data = { id: randomUUID(), activity_id: activity, user_id: by, kind: "like", created_at: at.toISOString() };
      return newEvent("reaction.added", tenant, data, { at, meta: { activity_actor: "user:ann", actor: `user:${by}` } });
    };
    const follow = newEvent("follow.created", tenant, { source_group: "timeline", source_id: "cat", target_group: "user", target_id: "ann" }, { at: new Date() });
    const first = like("bob");
    for (const e of [first, like("bob"), first, follow]) await n.handler(e, { redelivered: false });
    expect(heard.map((a) => [a.notification.verb, a.counts, a.group.activity_count, a.group.actor_count, a.groups_unseen, a.groups_unread])).toEqual([
      ["react", { unseen: 1, unread: 1 }, 1, 1, 1, 1],
      ["react", { unseen: 2, unread: 2 }, 2, 1, 1, 1],
      ["follow", { unseen: 3, unread: 3 }, 1, 1, 2, 2],
    ]);
    expect(heard[0]?.group.group_key).toBe(heard[1]?.group.group_key);
    expect(heard[2]?.group.group_key).toMatch(/^[0-9a-f]{32}$/);
    expect(heard[2]?.group.group_key).not.toBe(heard[0]?.group.group_key);
  });
});
