import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { limits } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { checkKinds, createReactionKinds } from "../src/reaction-kinds.js";

// Declared reaction kinds on real MongoDB-wire storage and Redis: two instances stand for two
// replicas, each reading through the shared cache.

describe("declared reaction kinds", { timeout: 60_000 }, () => {
  const env = createTestEnv("engagement_declared", { db: true, redis: true });
  beforeAll(env.open);
  afterAll(env.close);

  it("checks a list: at most the bound, valid kinds, no duplicates, each problem named", () => {
    const fieldsOf = (kinds: string[]) => {
      try {
        checkKinds(kinds);
        return null;
      } catch (e) {
        return (e as { fields: { path: string }[] }).fields.map((f) => f.path);
      }
    };
    expect(fieldsOf(Array.from({ length: limits.reactionKindsPerActivity + 1 }, (_, i) => `k${i}`))).toEqual(["kinds"]);
    expect(fieldsOf(["like", "like"])).toEqual(["kinds.1"]);
    expect(fieldsOf(["like", "a.b"])).toEqual(["kinds.1"]);
    expect(fieldsOf(["constructor"])).toEqual(["kinds.0"]);
    expect(fieldsOf([])).toBeNull();
    expect(checkKinds(["love", "like"])).toEqual(["love", "like"]);
  });

  it("a list set on one replica is what the other's next read sees, though it cached the one before; clearing removes the record", async () => {
    const a = createReactionKinds({ db: env.db, redis: env.redis });
    const b = createReactionKinds({ db: env.db, redis: env.redis });
    expect(await b.declared("t1")).toEqual([]);
    expect(await a.set("t1", ["love", "like"])).toEqual(["love", "like"]);
    expect(await b.declared("t1")).toEqual(["love", "like"]);
    expect(await b.declared("t1")).toEqual(["love", "like"]);
    expect(await b.declared("t2")).toEqual([]);
    expect(await env.db.collection("reaction_kinds").findOne({ _id: "t1" as never })).toMatchObject({ tenant_id: "t1", kinds: ["love", "like"] });
    expect(await a.set("t1", [])).toEqual([]);
    expect(await b.declared("t1")).toEqual([]);
    expect(await a.get("t1")).toEqual([]);
    expect(await env.db.collection("reaction_kinds").countDocuments({ _id: "t1" as never })).toBe(0);
  });

  it("the reaction path reads the cache, not MongoDB, once filled", async () => {
    const kinds = createReactionKinds({ db: env.db, redis: env.redis });
    await kinds.set("t3", ["wow"]);
    expect(await kinds.declared("t3")).toEqual(["wow"]);
    // A change behind the service's back is not seen until the entry is invalidated.
    await env.db.collection("reaction_kinds").updateOne({ _id: "t3" as never }, { $set: { kinds: ["sad"] } });
    expect(await kinds.declared("t3")).toEqual(["wow"]);
    expect(await kinds.get("t3")).toEqual(["sad"]);
  });
});
