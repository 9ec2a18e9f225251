import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { seal, unseal } from "../src/index.js";

describe("secrets at rest", () => {
  it("seals with AES-256-GCM bound to its owner", () => {
    const key = randomBytes(32);
    const sealed = seal(key, "s3cret", "tenant:t1");
    expect(JSON.stringify(sealed)).not.toContain("s3cret");
    expect(unseal(key, sealed, "tenant:t1")).toBe("s3cret");
    expect(() => unseal(key, sealed, "tenant:t2")).toThrow();
    expect(() => unseal(randomBytes(32), sealed, "tenant:t1")).toThrow();
  });
});
