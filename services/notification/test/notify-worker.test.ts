import { randomBytes, randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, newEvent, publishEvents, scope, type Clients, type FeedEvent, rootKeys } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { NotificationService } from "@feeds/proto/feeds/notification/v1/notification";
import { createNotifications } from "../src/notifications/index.js";
import { createNotifyWorker } from "../src/worker.js";

// The notifications handler inside the real notify worker, against real MongoDB-wire storage,
// NATS JetStream and Redis in a namespace of its own; identity is a stand-in that counts calls.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => Promise<boolean> | boolean, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("notifications in the notify worker", { timeout: 60_000 }, () => {
  const env = createTestEnv("notify_test", { db: true, redis: true, nats: { queues: ["notify"] } });
  const { log } = env;
  const getUsersCalls: string[][] = [];
  const peers = () =>
    ({
      users: {
        getUsers: async (req: { ids: string[] }) => {
          getUsersCalls.push(req.ids);
          return { users: req.ids.filter((id) => id !== "ghost").map((id) => ({ id, customJson: JSON.stringify({ name: id }) })) };
        },
      },
    }) as unknown as Pick<Clients, "users">;

  beforeAll(env.open);
  afterAll(env.close);

  const reaction = (tenant: string, owner: string, by: string, at = new Date()): FeedEvent =>
    newEvent("reaction.added", tenant, { id: randomUUID(), activity_id: randomUUID(), user_id: by, kind: "like", created_at: at.toISOString() }, {
      at,
      meta: { activity_actor: `user:${owner}`, actor: `user:${by}` },
    });

  it("a handler failing after the notification was written gets the event redelivered: the notification exists once, the counts stay exact", async () => {
    const { db, nats, redis } = env;
    const notifications = await createNotifications({ db, nats, redis, peers, log });
    const deliveries = new Map<string, number>();
    // Another handler (webhooks, say) that fails the first delivery of every event.
    const failsFirst = async (e: FeedEvent) => {
      const n = (deliveries.get(e.id) ?? 0) + 1;
      deliveries.set(e.id, n);
      if (n === 1) throw new Error("first delivery fails");
    };
    const worker = createNotifyWorker({ nats, log, handlers: [notifications.handler, failsFirst] });
    await worker.start();
    try {
      const tenant = `t-${randomUUID()}`;
      const events = Array.from({ length: 10 }, (_, i) => reaction(tenant, "alice", `u${i}`));
      await publishEvents(nats, events);
      await until("every event delivered twice", () => events.every((e) => deliveries.get(e.id) === 2));
      const docs = await db.collection<{ actor: string }>("notifications").find({ tenant_id: tenant }).toArray();
      expect(docs).toHaveLength(10);
      expect(new Set(docs.map((d) => d.actor))).toEqual(new Set(events.map((e) => e.meta?.actor)));
      const transport = createLocalTransport((r) => r.service(NotificationService, notifications.service), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
      const client = createClient(NotificationService, transport);
      const call = scope({ tenantId: tenant, caller: { kind: "server" } });
      const signal = await client.getNotificationSignal({ owner: "alice" }, call);
      expect([signal.unseen, signal.unread]).toEqual([10n, 10n]);
    } finally {
      await worker.stop();
    }
  });

  it("a page's actor_user comes from one identity call for all its actors (one per page; an empty page makes none)", async () => {
    const { db, nats, redis } = env;
    const notifications = await createNotifications({ db, nats, redis, peers, log });
    const worker = createNotifyWorker({ nats, log, handlers: [notifications.handler] });
    await worker.start();
    try {
      const tenant = `t-${randomUUID()}`;
      const base = Date.now() - 60_000;
      // Four actors (one of them twice, one with no user record) on one page.
      const by = ["bob", "carol", "bob", "ghost", "dave"];
      await publishEvents(nats, by.map((u, i) => reaction(tenant, "alice", u, new Date(base + i))));
      await until("five notifications", async () => (await db.collection("notifications").countDocuments({ tenant_id: tenant })) === 5);
      const transport = createLocalTransport((r) => r.service(NotificationService, notifications.service), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
      const client = createClient(NotificationService, transport);
      const call = scope({ tenantId: tenant, caller: { kind: "user", userId: "alice" } });
      getUsersCalls.length = 0;
      const page = await client.listNotifications({ page: { limit: 20 } }, call);
      expect(getUsersCalls).toEqual([["dave", "ghost", "bob", "carol"]]);
      expect(page.notifications.map((n) => [n.actor, n.actorUser?.id ?? null])).toEqual([
        ["user:dave", "dave"],
        ["user:ghost", null],
        ["user:bob", "bob"],
        ["user:carol", "carol"],
        ["user:bob", "bob"],
      ]);
      // Two pages: one call each.
      getUsersCalls.length = 0;
      const first = await client.listNotifications({ page: { limit: 3 } }, call);
      await client.listNotifications({ page: { limit: 3, cursor: first.next } }, call);
      expect(getUsersCalls).toEqual([["dave", "ghost", "bob"], ["carol", "bob"]]);
      // An empty page calls nobody.
      getUsersCalls.length = 0;
      await client.listNotifications({ page: { limit: 20 } }, scope({ tenantId: tenant, caller: { kind: "user", userId: "nobody" } }));
      expect(getUsersCalls).toEqual([]);
    } finally {
      await worker.stop();
    }
  });
});
