import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromRpcError, scope, toTimestamp } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import type { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import { localFeedService } from "./local-feed-service.js";

// An activity's lock (kit/src/lock.ts, shared by every replica) is its tenant's: a request of
// another tenant that names the same id holds a lock of its own, never the owner's. Real
// MongoDB-wire storage, Redis and NATS JetStream in a namespace of their own; the other tenant's
// request is held inside its lock (at the activity read the lock guards) for as long as the test
// wants.

/** Activity reads of these tenants wait for the promise first. */
const held = new Map<string, Promise<void>>();

describe("activity locks are per tenant", () => {
  const env = createTestEnv("feed_activity_lock", { db: true, redis: true, nats: { queues: ["fanout"] } });
  let client: Client<typeof FeedService>;

  beforeAll(async () => {
    await env.open();
    ({ client } = localFeedService(env, {
      activities: (real) => ({
        ...real,
        get: async (tenantId, id) => {
          await held.get(tenantId);
          return real.get(tenantId, id);
        },
      }),
    }));
  });

  afterAll(env.close);

  const as = (tenantId: string) => scope({ tenantId, caller: { kind: "server" } });
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => "OK",
      (e: unknown) => fromRpcError(e).code,
    );

  it("another tenant's request for the same id does not hold up the owner's patch", { timeout: 30_000 }, async () => {
    const [owner, other] = [`t-${randomBytes(4).toString("hex")}`, `t-${randomBytes(4).toString("hex")}`];
    const added = await client.addActivity(
      { feed: { group: "user", id: "a" }, activity: { actor: "service:x", verb: "post", object: "o:1", time: toTimestamp(new Date()), customJson: "{}", refs: [] } },
      as(owner),
    );
    const id = added.activity?.id ?? "";

    // The other tenant's patch of that id takes its lock, then stays inside it.
    let release!: () => void;
    held.set(other, new Promise<void>((r) => (release = r)));
    const intruder = outcome(client.patchActivity({ id, setJson: JSON.stringify({ "custom.x": 1 }), unset: [] }, as(other)));
    await new Promise((r) => setTimeout(r, 500));

    // With one lock per id the owner would wait for the intruder (up to the lock's 8 s wait).
    const started = Date.now();
    const patched = await Promise.race([
      client.patchActivity({ id, setJson: JSON.stringify({ "custom.owner": true }), unset: [] }, as(owner)),
      new Promise<null>((r) => setTimeout(() => r(null), 3000)),
    ]);
    const waited = Date.now() - started;
    release();
    expect(await intruder).toBe("NOT_FOUND");
    expect(patched, `the owner's patch was still waiting after ${waited} ms`).not.toBeNull();
    expect(JSON.parse(patched?.activity?.customJson ?? "{}")).toEqual({ owner: true });
  });
});
