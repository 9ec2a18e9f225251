import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  addActivityBody,
  batchActivityItem,
  batchObjectItem,
  batchUserItem,
  bulkObjectsBody,
  createPromotedBody,
  putObjectBody,
  requestLimits,
  upsertUserBody,
} from "../src/index.js";
import { depthExceeds } from "../src/schemas-custom.js";

// Every client `custom` is bounded in depth before anything recursive runs (the size check's
// JSON.stringify overflowed the stack at 20,000 levels), and in size after.

const { customDepth, customBytes } = requestLimits;
const DEPTH_RULE = `must be at most ${customDepth} levels deep`;
const BYTES_RULE = `must be at most ${customBytes / 1024} KB serialized`;

/** An object `depth` levels deep (`{}` is 1), built without recursion. */
const nested = (depth: number) => {
  let v: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
};

const issues = (schema: z.ZodType, body: unknown) => {
  const r = schema.safeParse(body);
  return r.success ? [] : r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
};

describe("depthExceeds", () => {
  it("counts objects and arrays, not scalars", () => {
    expect([1, "s", null, true, undefined].map((v) => depthExceeds(v, 0))).toEqual([false, false, false, false, false]);
    expect(depthExceeds({}, 1)).toBe(false);
    expect(depthExceeds({}, 0)).toBe(true);
    expect(depthExceeds({ a: [1, { b: [] }] }, 4)).toBe(false);
    expect(depthExceeds({ a: [1, { b: [] }] }, 3)).toBe(true);
    expect(depthExceeds([[], [[["x"]]], {}], 4)).toBe(false);
    expect(depthExceeds([[], [[["x"]]], {}], 3)).toBe(true);
  });

  it("finds a deep branch behind wide siblings, and walks 300,000 levels without a stack", () => {
    const wide = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i % 2 ? {} : [1]]));
    expect(depthExceeds({ ...wide, z: nested(5) }, 6)).toBe(false);
    expect(depthExceeds({ ...wide, z: nested(6) }, 6)).toBe(true);
    const deep = JSON.parse("[".repeat(300_000) + "]".repeat(300_000)) as unknown;
    expect(depthExceeds(deep, customDepth)).toBe(true);
    expect(depthExceeds({ a: deep }, 300_001)).toBe(false);
  });
});

const item = { verb: "v", object: "o" };
/** Each schema that carries a client custom, a body around a given custom, and the field it names. */
const carriers: [name: string, schema: z.ZodType, body: (custom: unknown) => unknown, field: string][] = [
  ["addActivityBody", addActivityBody, (custom) => ({ ...item, custom }), "custom"],
  ["batchActivityItem", batchActivityItem, (custom) => ({ feed: "user:a", activity: { ...item, actor: "a", custom } }), "activity.custom"],
  ["putObjectBody", putObjectBody, (custom) => ({ custom }), "custom"],
  ["batchObjectItem", batchObjectItem, (custom) => ({ type: "t", id: "i", custom }), "custom"],
  ["bulkObjectsBody", bulkObjectsBody, (custom) => ({ objects: [{ type: "t", id: "i", custom: {} }, { type: "t", id: "j", custom }] }), "objects.1.custom"],
  ["upsertUserBody", upsertUserBody, (custom) => ({ custom }), "custom"],
  ["batchUserItem", batchUserItem, (custom) => ({ id: "u", custom }), "custom"],
  ["createPromotedBody", createPromotedBody, (custom) => ({ ...item, actor: "a", custom }), "custom"],
];

describe.each(carriers)("%s", (_name, schema, body, field) => {
  it(`accepts custom ${customDepth} levels deep and refuses one level more, naming the field`, () => {
    expect(issues(schema, body(nested(customDepth)))).toEqual([]);
    expect(issues(schema, body({ list: [nested(customDepth - 2)] }))).toEqual([]);
    expect(issues(schema, body(nested(customDepth + 1)))).toEqual([{ path: field, message: DEPTH_RULE }]);
    expect(issues(schema, body({ list: [nested(customDepth - 1)] }))).toEqual([{ path: field, message: DEPTH_RULE }]);
  });

  it("answers 20,000 and 300,000 levels with the same issue instead of throwing", () => {
    expect(issues(schema, body(nested(20_000)))).toEqual([{ path: field, message: DEPTH_RULE }]);
    expect(issues(schema, body({ a: JSON.parse("[".repeat(300_000) + "]".repeat(300_000)) }))).toEqual([{ path: field, message: DEPTH_RULE }]);
  });

  it("still bounds the size, and still wants an object", () => {
    expect(issues(schema, body({ s: "x".repeat(customBytes - 8) }))).toEqual([]);
    expect(issues(schema, body({ s: "x".repeat(customBytes - 7) }))).toEqual([{ path: field, message: BYTES_RULE }]);
    expect(issues(schema, body([[[]]])).map((i) => i.path)).toEqual([field]);
  });
});
