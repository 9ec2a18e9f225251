import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Lease } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { createCountClaims, CLAIM_TTL_MS } from "../src/count-claims.js";
import { createReactionRepository, reactionKey } from "../src/reaction-repository.js";
import { createRecounts } from "../src/recounts.js";

// A reaction change is counted by its writer and, when the writer is slower than the outbox
// relay (or dead), by the relay too: against real MongoDB-wire storage, the version moves once
// per change whoever counts it first, and never for a change that did not happen.

const T = "tenant-1";
const lease = { assertHeld: async () => undefined } as unknown as Lease;

interface SetCounts {
  counts: Record<string, number>;
  complete: boolean;
  changes: number;
  exact: boolean;
}

describe("count claims", { timeout: 30_000 }, () => {
  const env = createTestEnv("engagement_claims", { db: true });
  beforeAll(env.open);
  afterAll(env.close);

  /** Recounts over real records and claims; the feed's SetReactionCounts recorded, its version rule applied. */
  function setup() {
    const reactions = createReactionRepository(env.db);
    const claims = createCountClaims(env.db);
    const calls: SetCounts[] = [];
    let stored: Record<string, number> = {};
    let version = 1;
    const same = (a: Record<string, number>, b: Record<string, number>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
    const recounts = createRecounts({
      reactions,
      comments: { countReplies: async () => 0, setReplyCount: async () => { throw new Error("no replies here"); } },
      activities: {
        setCounts: async (_t, _a, counts, opts) => {
          calls.push({ counts, ...opts });
          const next = opts.complete ? { ...counts } : { ...stored, ...counts };
          for (const [k, n] of Object.entries(next)) if (n === 0) delete next[k];
          // services/feed/src/routes.ts setReactionCounts
          version += opts.exact ? opts.changes : opts.changes > 0 ? opts.changes : same(next, stored) ? 0 : 1;
          stored = next;
        },
      },
      claim: claims.claim,
    });
    const activity = randomUUID();
    const react = async (user: string) => {
      await reactions.insert({ _id: reactionKey(T, activity, user, "like"), id: randomUUID(), tenant_id: T, activity_id: activity, user_id: user, kind: "like", created_at: new Date() });
    };
    return { recounts, claims, calls, activity, react, version: () => version, stored: () => stored };
  }

  it("a change the relay counted before its slow writer moves the version once", async () => {
    const s = setup();
    const record = randomUUID();
    await s.react("u1");
    // The relay's repair of the writer's outbox record (the writer is slower than the relay)...
    await s.recounts.reactions(T, s.activity, lease, { record, happened: async () => true });
    // ...then the writer's own count of the same change.
    await s.recounts.reactionKinds(T, s.activity, ["like"], [record], lease);
    expect(s.stored()).toEqual({ like: 1 });
    expect(s.version()).toBe(2);
  });

  it("a writer that counted before the relay: the relay's repair moves nothing", async () => {
    const s = setup();
    const record = randomUUID();
    await s.react("u1");
    await s.recounts.reactionKinds(T, s.activity, ["like"], [record], lease);
    await s.recounts.reactions(T, s.activity, lease, { record, happened: async () => true });
    expect(s.version()).toBe(2);
  });

  it("the relay finds the change not yet made: the writer's count moves the version after it", async () => {
    const s = setup();
    const record = randomUUID();
    await s.recounts.reactions(T, s.activity, lease, { record, happened: async () => false });
    expect(s.version()).toBe(1);
    await s.react("u1");
    await s.recounts.reactionKinds(T, s.activity, ["like"], [record], lease);
    expect(s.version()).toBe(2);
  });

  it("a batch of writers after the relay took some of their changes: one move per change in all", async () => {
    const s = setup();
    const records = Array.from({ length: 5 }, () => randomUUID());
    for (let i = 0; i < 5; i++) await s.react(`u${i}`);
    for (const record of records.slice(0, 2)) await s.recounts.reactions(T, s.activity, lease, { record, happened: async () => true });
    await s.recounts.reactionKinds(T, s.activity, ["like"], records, lease);
    expect(s.stored()).toEqual({ like: 5 });
    expect(s.version()).toBe(6);
  });

  it("claims answer how many were new; the sweep drops only old ones", async () => {
    const { claims } = setup();
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    expect(await claims.claim([a, b])).toBe(2);
    expect(await claims.claim([a, b, c])).toBe(1);
    expect(await claims.claim([])).toBe(0);
    await claims.sweep(Date.now() + CLAIM_TTL_MS - 60_000);
    expect(await claims.claim([a])).toBe(0);
    await claims.sweep(Date.now() + CLAIM_TTL_MS + 60_000);
    expect(await claims.claim([a])).toBe(1);
  });
});
