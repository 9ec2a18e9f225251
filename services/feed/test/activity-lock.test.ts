import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromRpcError, scope, toTimestamp } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import type { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import type { ActivityRepository } from "../src/activity-repository.js";
import { localFeedService } from "./local-feed-service.js";

// The activity lock that reaction counts still take (kit/src/lock.ts, shared by every replica) is
// its tenant's: a request of another tenant that names the same id holds a lock of its own, never
// the owner's. Real MongoDB-wire storage, Redis and NATS JetStream in a namespace of their own;
// the other tenant's request is held inside its lock (at the activity read the lock guards) for as
// long as the test wants.

/** Activity reads of these tenants wait for the promise first. */
const held = new Map<string, Promise<void>>();

describe("activity locks are per tenant", () => {
  const env = createTestEnv("feed_activity_lock", { db: true, redis: true, nats: { queues: ["fanout"] } });
  let client: Client<typeof FeedService>;
  let engagement: Client<typeof FeedService>;

  beforeAll(async () => {
    await env.open();
    const activities = (real: ActivityRepository): ActivityRepository => ({
      ...real,
      get: async (tenantId, id) => {
        await held.get(tenantId);
        return real.get(tenantId, id);
      },
    });
    ({ client } = localFeedService(env, { activities }));
    // Reaction counts are the engagement service's to write.
    ({ client: engagement } = localFeedService(env, { activities, caller: "engagement" }));
  });

  afterAll(env.close);

  const as = (tenantId: string) => scope({ tenantId, caller: { kind: "server" } });
  const system = (tenantId: string) => scope({ tenantId, caller: { kind: "system" } });
  const counts = (id: string, like: bigint) => ({ id, counts: { like }, complete: false, exact: true, changes: 1 });
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => "OK",
      (e: unknown) => fromRpcError(e).code,
    );

  it("another tenant's request for the same id does not hold up the owner's reaction counts", { timeout: 30_000 }, async () => {
    const [owner, other] = [`t-${randomBytes(4).toString("hex")}`, `t-${randomBytes(4).toString("hex")}`];
    const added = await client.addActivity(
      { feed: { group: "user", id: "a" }, activity: { actor: "service:x", verb: "post", object: "o:1", time: toTimestamp(new Date()), customJson: "{}", refs: [] } },
      as(owner),
    );
    const id = added.activity?.id ?? "";

    // The other tenant's count write for that id takes its lock, then stays inside it.
    let release!: () => void;
    held.set(other, new Promise<void>((r) => (release = r)));
    const intruder = outcome(engagement.setReactionCounts(counts(id, 5n), system(other)));
    await new Promise((r) => setTimeout(r, 500));

    // With one lock per id the owner would wait for the intruder (up to the lock's 8 s wait).
    const started = Date.now();
    const counted = await Promise.race([
      engagement.setReactionCounts(counts(id, 1n), system(owner)),
      new Promise<null>((r) => setTimeout(() => r(null), 3000)),
    ]);
    const waited = Date.now() - started;
    release();
    expect(await intruder).toBe("NOT_FOUND");
    expect(counted, `the owner's count write was still waiting after ${waited} ms`).not.toBeNull();
    expect(counted?.activity?.reactionCounts).toEqual({ like: 1n });
  });
});
