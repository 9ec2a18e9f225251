import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, FeedsError, pageLimit } from "../src/index.js";

describe("cursor codec", () => {
  it("round-trips keyset values", () => {
    const c = encodeCursor([1700000000000, "abc"]);
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(c, ["number", "string"] as const)).toEqual([1700000000000, "abc"]);
  });

  it.each([
    ["not base64", "%%%"],
    ["not JSON", Buffer.from("nope").toString("base64url")],
    ["wrong arity", encodeCursor([1])],
    ["wrong types", encodeCursor(["a", 1])],
    ["non-finite", Buffer.from("[1e999,\"a\"]").toString("base64url")],
    ["empty", ""],
  ])("rejects %s as VALIDATION_FAILED on next", (_label, cursor) => {
    try {
      decodeCursor(cursor, ["number", "string"] as const);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(FeedsError);
      expect((e as FeedsError).code).toBe("VALIDATION_FAILED");
      expect((e as FeedsError).fields).toEqual([{ path: "next", message: "malformed cursor" }]);
    }
  });

  it("bounds page limits", () => {
    expect(pageLimit(0)).toBe(20);
    expect(pageLimit(100)).toBe(100);
    expect(() => pageLimit(101)).toThrow(FeedsError);
  });
});
