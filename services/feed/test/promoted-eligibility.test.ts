import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { isFeedsError } from "@feeds/kit";
import { AudienceSchema, CreatePromotedRequestSchema } from "@feeds/proto/feeds/feed/v1/feed";
import { eligibleFilter, isEligible } from "../src/promoted-repository.js";
import { checkAudience, checkPromoted } from "../src/promoted-routes.js";

// Pure rules of promoted activities: eligibility (contract "Promoted eligibility") and validation.

describe("promoted eligibility", () => {
  const aliceHome = { feed: "timeline:alice", userId: "alice" };
  const serverRead = { feed: "timeline:alice", userId: null };

  it("shows a record without an audience to every read", () => {
    expect(isEligible(null, aliceHome)).toBe(true);
    expect(isEligible(null, serverRead)).toBe(true);
    expect(isEligible(null, { feed: "user:zed", userId: "bob" })).toBe(true);
  });

  it("shows a feed-targeted record to reads of that feed, by any token", () => {
    const audience = { users: [], feeds: ["timeline:alice", "user:carol"] };
    expect(isEligible(audience, aliceHome)).toBe(true);
    expect(isEligible(audience, serverRead)).toBe(true);
    expect(isEligible(audience, { feed: "user:carol", userId: "bob" })).toBe(true);
    expect(isEligible(audience, { feed: "user:alice", userId: "bob" })).toBe(false);
    // group and id are both part of the ref
    expect(isEligible(audience, { feed: "timeline:carol", userId: null })).toBe(false);
  });

  it("shows a user-targeted record only to user tokens of those users, on any feed", () => {
    const audience = { users: ["alice"], feeds: [] };
    expect(isEligible(audience, aliceHome)).toBe(true);
    expect(isEligible(audience, { feed: "user:somebody", userId: "alice" })).toBe(true);
    expect(isEligible(audience, { feed: "timeline:alice", userId: "bob" })).toBe(false);
    // A server token has no end-user: reading alice's feed is not alice reading.
    expect(isEligible(audience, serverRead)).toBe(false);
  });

  it("matches either list when both are given", () => {
    const audience = { users: ["bob"], feeds: ["user:news"] };
    expect(isEligible(audience, { feed: "user:news", userId: null })).toBe(true);
    expect(isEligible(audience, { feed: "user:other", userId: "bob" })).toBe(true);
    expect(isEligible(audience, { feed: "user:other", userId: "alice" })).toBe(false);
  });

  it("states the same rule as a storage filter, tenant and liveness included", () => {
    expect(eligibleFilter("t1", aliceHome)).toEqual({
      tenant_id: "t1",
      retracted_at: null,
      $or: [{ audience: null }, { "audience.feeds": "timeline:alice" }, { "audience.users": "alice" }],
    });
    expect(eligibleFilter("t2", serverRead)).toEqual({
      tenant_id: "t2",
      retracted_at: null,
      $or: [{ audience: null }, { "audience.feeds": "timeline:alice" }],
    });
  });
});

describe("promoted validation", () => {
  const fieldsOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      if (isFeedsError(e) && e.code === "VALIDATION_FAILED") return e.fields.map((f) => f.path);
      throw e;
    }
    return [];
  };
  const req = (init: Parameters<typeof create<typeof CreatePromotedRequestSchema>>[1]) =>
    create(CreatePromotedRequestSchema, { actor: "brand:acme", verb: "promote", object: "product:1", ...init });

  it("accepts a minimal body: no audience, custom {}", () => {
    expect(checkPromoted(req({}))).toEqual({ custom: {}, audience: null });
    expect(checkPromoted(req({ customJson: '{"a":1}' })).custom).toEqual({ a: 1 });
  });

  it("requires actor, verb and object within the contract's lengths", () => {
    expect(fieldsOf(() => checkPromoted(req({ actor: "", verb: "", object: "" })))).toEqual(["actor", "verb", "object"]);
    expect(fieldsOf(() => checkPromoted(req({ actor: "a".repeat(257), verb: "v".repeat(65), object: "o".repeat(257) })))).toEqual([
      "actor",
      "verb",
      "object",
    ]);
    expect(fieldsOf(() => checkPromoted(req({ actor: "a".repeat(256), verb: "v".repeat(64), object: "o".repeat(256) })))).toEqual([]);
  });

  it("limits custom to a JSON object of at most 64 KB", () => {
    expect(fieldsOf(() => checkPromoted(req({ customJson: "[1]" })))).toEqual(["custom"]);
    expect(fieldsOf(() => checkPromoted(req({ customJson: JSON.stringify({ s: "x".repeat(65 * 1024) }) })))).toEqual(["custom"]);
  });

  it("checks audience entries by the contract's patterns and drops duplicates", () => {
    const audience = (users: string[], feeds: string[]) => create(AudienceSchema, { users, feeds });
    expect(checkAudience(undefined)).toEqual({ audience: null, errors: [] });
    expect(checkAudience(audience(["a", "a", "b"], ["user:x", "user:x"])).audience).toEqual({ users: ["a", "b"], feeds: ["user:x"] });
    const bad = checkAudience(audience(["ok", "not ok", "x".repeat(129)], ["user:x", "nocolon", "bad-group:x", "user:", ":x"]));
    expect(bad.errors.map((e) => e.path)).toEqual([
      "audience.users.1",
      "audience.users.2",
      "audience.feeds.1",
      "audience.feeds.2",
      "audience.feeds.3",
      "audience.feeds.4",
    ]);
    expect(checkAudience(audience([], [])).errors.map((e) => e.path)).toEqual(["audience"]);
    expect(checkAudience(audience(Array.from({ length: 1001 }, (_, i) => `u${i}`), [])).errors.map((e) => e.path)).toEqual(["audience.users"]);
    expect(fieldsOf(() => checkPromoted(req({ verb: "", audience: { users: ["bad id"], feeds: [] } })))).toEqual(["verb", "audience.users.0"]);
  });
});
