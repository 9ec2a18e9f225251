import { randomBytes, randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, scope, type Clients, rootKeys } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { NotificationService } from "@feeds/proto/feeds/notification/v1/notification";
import { COUNTS, countsKey } from "../src/notifications/counts.js";
import { createNotifications } from "../src/notifications/index.js";
import type { NotificationDoc } from "../src/notifications/notification-repository.js";

// The owner's unseen/unread counts kept by increments, against real MongoDB-wire storage: exact
// under concurrent inserts and marks without ever counting the records, once per notification
// however often it is delivered, and finished by the relays for a writer that died.

const peers = () => ({ users: { getUsers: async () => ({ users: [] }) } }) as unknown as Pick<Clients, "users">;

describe("notification counts", { timeout: 60_000 }, () => {
  // Each command as "<name> <collection>": a count of the records is one on `notifications`.
  const commands: string[] = [];
  const env = createTestEnv("notify_counts", { db: { onCommand: (e) => void commands.push(`${e.commandName} ${String(e.command[e.commandName])}`) }, nats: true, redis: true });
  const { log } = env;
  beforeAll(env.open);
  afterAll(env.close);

  const setUp = async () => {
    // Relays on demand (relayOnce), graces short enough for a test to outwait them.
    const n = await createNotifications({ db: env.db, nats: env.nats, redis: env.redis, peers, log, graceMs: { inserts: 300, marks: 300 } });
    const transport = createLocalTransport((r) => r.service(NotificationService, n.service), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
    const client = createClient(NotificationService, transport);
    const tenant = `t${randomBytes(4).toString("hex")}`;
    const as = scope({ tenantId: tenant, caller: { kind: "server" } });
    const signal = async (owner: string) => {
      const s = await client.getNotificationSignal({ owner }, as);
      return { unseen: Number(s.unseen), unread: Number(s.unread), version: Number(s.version) };
    };
    const records = async (owner: string) => {
      const all = await env.db.collection<NotificationDoc>("notifications").find({ tenant_id: tenant, owner }).toArray();
      return { unseen: all.filter((d) => !d.seen_at).length, unread: all.filter((d) => !d.read_at).length };
    };
    const doc = (owner: string, i: number): NotificationDoc => ({
      _id: randomUUID(),
      tenant_id: tenant,
      owner,
      verb: "react",
      actor: `user:u${i}`,
      object: "note:1",
      reaction_kind: "like",
      activity_id: randomUUID(),
      created_at: new Date(Date.now() - 60_000 + i),
      seen_at: null,
      read_at: null,
    });
    return { n, client, tenant, as, signal, records, doc };
  };

  it("50 notifications stored at once for one owner count 50 and 50, with no count of the records and a few updates of the counts, not 50", async () => {
    const { n, signal, doc } = await setUp();
    const add = (d: NotificationDoc) => n.changesForTests.add(d);
    commands.length = 0;
    const added = await Promise.all(Array.from({ length: 50 }, (_, i) => add(doc("alice", i))));
    expect(added.filter(Boolean)).toHaveLength(50);
    expect(await signal("alice")).toMatchObject({ unseen: 50, unread: 50 });
    // Neither the counts nor the group counts of the live events count (or scan) the records.
    expect(commands.filter((c) => /^(aggregate|count|distinct) notifications$/.test(c))).toEqual([]);
    const updates = commands.filter((c) => c === "findAndModify notification_counts").length;
    expect(updates).toBeGreaterThan(0);
    expect(updates).toBeLessThan(10);
  });

  it("a notification delivered again (a redelivered event) is stored and counted once", async () => {
    const { n, signal, doc } = await setUp();
    const add = (d: NotificationDoc) => n.changesForTests.add(d);
    const d = doc("bob", 1);
    const added = await Promise.all([add({ ...d }), add({ ...d }), add({ ...d })]);
    expect(added.map((a) => a !== null)).toEqual(expect.arrayContaining([true, false, false]));
    await n.relayOnce();
    expect(await signal("bob")).toMatchObject({ unseen: 1, unread: 1 });
  });

  it("marks racing inserts end exact: the counts equal the records", async () => {
    const { n, client, as, signal, records, doc } = await setUp();
    const add = (d: NotificationDoc) => n.changesForTests.add(d);
    const inserting = (async () => {
      for (let i = 0; i < 60; i += 6) await Promise.all(Array.from({ length: 6 }, (_, k) => add(doc("carol", i + k))));
    })();
    const marking = (async () => {
      for (let i = 0; i < 8; i++) {
        const page = await client.listNotifications({ owner: "carol", page: { limit: 5 } }, as);
        const ids = page.notifications.map((x) => x.id);
        await client.markNotifications(i % 3 === 0 ? { owner: "carol", seen: { all: true, ids: [] } } : i % 3 === 1 ? { owner: "carol", read: { all: false, ids } } : { owner: "carol", seen: { all: false, ids } }, as);
      }
    })();
    await Promise.all([inserting, marking]);
    const truth = await records("carol");
    expect(truth.unread).toBeGreaterThan(0);
    expect(await signal("carol")).toMatchObject(truth);
    const page = await client.listNotifications({ owner: "carol", page: { limit: 10 } }, as);
    expect({ unseen: Number(page.unseen), unread: Number(page.unread) }).toEqual(truth);
  });

  it("a notification whose writer died after its insert is counted by the relay, once; the page counts it meanwhile", async () => {
    const { n, client, tenant, as, signal, doc } = await setUp();
    await n.changesForTests.add(doc("dora", 0));
    // What a worker leaves when it dies right after its insert: the record with its pending change.
    const d = doc("dora", 1);
    const change = { id: d._id, at: new Date(), messages: [], targets: [{ collection: COUNTS, id: countsKey(tenant, "dora") }], data: { unseen: 1, unread: 1 } };
    await env.db.collection<NotificationDoc>("notifications").insertOne({ ...d, outbox: [change], outbox_pending: true });
    expect(await signal("dora")).toMatchObject({ unseen: 1, unread: 1 });
    const page = await client.listNotifications({ owner: "dora", page: { limit: 10 } }, as);
    expect(page.notifications).toHaveLength(2);
    expect({ unseen: Number(page.unseen), unread: Number(page.unread) }).toEqual({ unseen: 2, unread: 2 });
    await n.flush();
    await new Promise((r) => setTimeout(r, 400));
    expect(await n.relayOnce()).toBe(1);
    expect(await n.relayOnce()).toBe(0);
    expect(await signal("dora")).toMatchObject({ unseen: 2, unread: 2 });
  });

  it("a notification whose writer died after counting it, before clearing its change, is not counted again by the relay", async () => {
    const { n, tenant, signal, doc } = await setUp();
    const d = doc("fred", 0);
    const change = { id: d._id, at: new Date(), messages: [], targets: [{ collection: COUNTS, id: countsKey(tenant, "fred") }], data: { unseen: 1, unread: 1 } };
    await env.db.collection<NotificationDoc>("notifications").insertOne({ ...d, outbox: [change], outbox_pending: true });
    await n.countsForTests.apply(tenant, "fred", change.id, { unseen: 1, unread: 1 });
    expect(await signal("fred")).toMatchObject({ unseen: 1, unread: 1 });
    await new Promise((r) => setTimeout(r, 400));
    expect(await n.relayOnce()).toBe(1);
    expect(await signal("fred")).toMatchObject({ unseen: 1, unread: 1 });
  });

  it("a mark whose writer died halfway comes off the counts by what it stamped, once", async () => {
    const { n, tenant, signal, doc } = await setUp();
    const add = (d: NotificationDoc) => n.changesForTests.add(d);
    const docs = Array.from({ length: 5 }, (_, i) => doc("erin", i));
    for (const d of docs) await add(d);
    const before = await signal("erin");
    expect(before).toMatchObject({ unseen: 5, unread: 5 });
    // The mark's pending change recorded, three of five set, then the writer died.
    const id = randomUUID();
    const at = new Date();
    const change = { id, at, messages: [], targets: [{ collection: COUNTS, id: countsKey(tenant, "erin") }], data: { seen: "all", read: null } };
    await env.db.collection<{ _id: string }>(COUNTS).updateOne({ _id: countsKey(tenant, "erin") }, { $push: { outbox: change } as never, $set: { outbox_pending: true } });
    await env.db.collection<NotificationDoc>("notifications").updateMany({ _id: { $in: docs.slice(0, 3).map((d) => d._id) } }, { $set: { seen_at: at, seen_by: id } });
    await n.flush();
    await new Promise((r) => setTimeout(r, 400));
    expect(await n.relayOnce()).toBe(1);
    expect(await n.relayOnce()).toBe(0);
    const after = await signal("erin");
    expect(after).toMatchObject({ unseen: 2, unread: 5 });
    expect(after.version).toBeGreaterThan(before.version);
  });
});
