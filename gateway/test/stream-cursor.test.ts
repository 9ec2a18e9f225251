import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../src/stream/cursor.js";

// The stream's cursor (the SSE id): opaque base64url of a sequence and a time, read back exactly;
// anything else is not a cursor (the route answers 400).

describe("stream cursors", () => {
  it("round-trips a position", () => {
    for (const p of [{ seq: 0, ms: 0 }, { seq: 1, ms: 1795750254352 }, { seq: 2 ** 48, ms: 1 }]) {
      const c = encodeCursor(p);
      expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(c)).toEqual(p);
    }
  });

  it("refuses what it did not write", () => {
    const b64 = (s: string) => Buffer.from(s).toString("base64url");
    for (const bad of ["", "x", "not a cursor", b64("1"), b64("1.2.3"), b64("-1.2"), b64("1.x"), b64(`${"9".repeat(16)}.1`), "a".repeat(65), "MS4y=", "MS4y/"]) {
      expect(decodeCursor(bad), bad).toBeNull();
    }
  });
});
