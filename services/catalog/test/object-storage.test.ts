import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnv } from "@feeds/kit/testing";
import { createObjectRepository, type ObjectRepository } from "../src/object-repository.js";

// The object repository on real MongoDB-wire storage, in a namespace of its own dropped
// afterwards: a patch's compare-and-set is one update conditioned on the version.

describe("object storage", () => {
  const env = createTestEnv("catalog_objects", { db: true });
  let objects: ObjectRepository;

  beforeAll(async () => {
    await env.open();
    objects = createObjectRepository(env.db);
  });

  afterAll(env.close);

  it("of N compare-and-sets from one version exactly one wins, and the version moves once", async () => {
    await objects.put("t1", { type: "race", id: "r", customJson: "{}" });
    const prev = await objects.get("t1", "race", "r");
    expect(prev?.version).toBe(1);
    const n = 40;
    const won = await Promise.all(Array.from({ length: n }, (_, i) => objects.replaceCustom("t1", prev!, JSON.stringify({ i }))));
    const winners = won.filter((d) => d !== null);
    console.log(`object compare-and-set: ${winners.length} of ${n} racers won`);
    expect(winners).toHaveLength(1);
    const stored = await objects.get("t1", "race", "r");
    expect(stored?.version).toBe(2);
    expect(stored?.custom_json).toBe(winners[0]?.custom_json);
  });

  it("a put moves the version: a compare-and-set from before it loses", async () => {
    await objects.put("t1", { type: "race", id: "p", customJson: '{"a":1}' });
    const prev = (await objects.get("t1", "race", "p"))!;
    await objects.put("t1", { type: "race", id: "p", customJson: '{"b":2}' });
    expect(await objects.replaceCustom("t1", prev, '{"a":2}')).toBeNull();
    const now = (await objects.get("t1", "race", "p"))!;
    expect(now.custom_json).toBe('{"b":2}');
    expect((await objects.replaceCustom("t1", now, '{"c":3}'))?.version).toBe(3);
  });

  it("an object stored before versions is patched once from its unversioned state", async () => {
    await env.db.collection("objects").insertOne({
      _id: "t1/old/o" as never,
      tenant_id: "t1",
      type: "old",
      id: "o",
      custom_json: "{}",
      updated_at: new Date(),
    });
    const prev = (await objects.get("t1", "old", "o"))!;
    const won = await Promise.all(Array.from({ length: 10 }, () => objects.replaceCustom("t1", prev, '{"x":1}')));
    expect(won.filter((d) => d !== null).map((d) => d?.version)).toEqual([1]);
  });
});
