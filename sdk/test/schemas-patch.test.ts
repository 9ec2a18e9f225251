import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { patchActivityBody, patchObjectBody } from "../src/index.js";

// The one path rule of both patch bodies, as the gateway validates them.

const issues = (schema: z.ZodType, body: unknown) => {
  const r = schema.safeParse(body);
  return r.success ? [] : r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
};
const RESERVED = "must not contain a __proto__, constructor or prototype segment";

describe.each([
  ["patchActivityBody", patchActivityBody],
  ["patchObjectBody", patchObjectBody],
] as const)("%s", (_name, schema) => {
  it("refuses __proto__, constructor and prototype segments, naming each field", () => {
    const body = {
      set: { "custom.__proto__.audience": "x", "custom.constructor.prototype.x": 1, "custom.a.prototype": 1, "custom.ok": 1 },
      unset: ["custom.__proto__.hasOwnProperty", "custom.constructor"],
    };
    expect(issues(schema, body)).toEqual([
      { path: "set.custom.__proto__.audience", message: RESERVED },
      { path: "set.custom.constructor.prototype.x", message: RESERVED },
      { path: "set.custom.a.prototype", message: RESERVED },
      { path: "unset.0", message: RESERVED },
      { path: "unset.1", message: RESERVED },
    ]);
  });

  it("accepts names that only look alike, and inherited names as fields", () => {
    const body = { set: { "custom.__proto__x": 1, "custom.constructors": 1, "custom.toString.x": 1, "custom.hasOwnProperty": 1 } };
    expect(issues(schema, body)).toEqual([]);
  });

  it("names paths outside custom., empty segments and overlaps", () => {
    expect(issues(schema, { set: { title: 1, "custom..a": 1, "custom.a": 1, "custom.a.b": 1 }, unset: ["custom"] }).map((i) => i.path)).toEqual([
      "set.title",
      "set.custom..a",
      "set.custom.a.b",
      "unset.0",
    ]);
  });
});

describe("the $ rule stays per route", () => {
  it("activities refuse a segment starting with $, objects accept it", () => {
    expect(issues(patchActivityBody, { set: { "custom.$where": 1 }, unset: ["custom.a.$b"] }).map((i) => i.path)).toEqual(["set.custom.$where", "unset.0"]);
    expect(issues(patchObjectBody, { set: { "custom.$where": 1 }, unset: ["custom.a.$b"] })).toEqual([]);
  });
});
