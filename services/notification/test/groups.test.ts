import { randomBytes, randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, newEvent, rootKeys, scope, type Clients } from "@feeds/kit";
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
  const env = createTestEnv("notify_groups", { db: true, nats: true, redis: true });
  beforeAll(env.open);
  afterAll(env.close);

  const setUp = async () => {
    // Relays on demand (relayOnce), graces short enough for a test to outwait them.
    const n = await createNotifications({ db: env.db, nats: env.nats, redis: env.redis, peers, log: env.log, graceMs: { inserts: 300, marks: 300 } });
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
