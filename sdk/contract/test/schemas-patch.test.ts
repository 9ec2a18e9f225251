import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { patchActivityBody, patchObjectBody, requestLimits } from "../src/index.js";

// The one path rule of both patch bodies, as the gateway validates them, and the bounds that keep
// a hostile body cheap.

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

const { patchSetKeys, patchUnsetPaths, patchPathChars, patchPathSegments, patchSetBytes, customDepth } = requestLimits;
const pathOf = (fields: number, field = "a") => ["custom", ...Array<string>(fields).fill(field)].join(".");
/** An object `depth` levels deep (`{}` is 1). */
const nested = (depth: number) => {
  let v: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
};

describe.each([
  ["patchActivityBody", patchActivityBody],
  ["patchObjectBody", patchObjectBody],
] as const)("%s: bounds, each checked before the work it bounds", (_name, schema) => {
  it("refuses the 1,000 keys of ~505 segments (~1 MiB) by the key cap alone, before any path is split", () => {
    const set: Record<string, number> = {};
    for (let i = 0; i < 1000; i++) set[`custom.k${String(i).padStart(3, "0")}.${Array<string>(503).fill("a").join(".")}`] = 1;
    expect(JSON.stringify({ set }).length).toBeGreaterThan(1_000_000);
    expect(issues(schema, { set })).toEqual([{ path: "set", message: `at most ${patchSetKeys} keys` }]);
  });

  it("caps set keys and unset entries by count", () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`custom.k${i}`, i]));
    const paths = (n: number) => Array.from({ length: n }, (_, i) => `custom.u${i}`);
    expect(issues(schema, { set: keys(patchSetKeys), unset: paths(patchUnsetPaths) })).toEqual([]);
    expect(issues(schema, { set: keys(patchSetKeys + 1) })).toEqual([{ path: "set", message: `at most ${patchSetKeys} keys` }]);
    expect(issues(schema, { unset: paths(patchUnsetPaths + 1) })).toEqual([{ path: "unset", message: `at most ${patchUnsetPaths} paths` }]);
  });

  it("caps each path's characters and segments, naming the path", () => {
    const longest = `custom.${"x".repeat(patchPathChars - 7)}`;
    const deepest = pathOf(patchPathSegments - 1);
    expect(issues(schema, { set: { [longest]: 1, [deepest]: 1 } })).toEqual([]);
    const tooLong = `${longest}x`;
    const tooDeep = pathOf(patchPathSegments);
    expect(issues(schema, { set: { [tooLong]: 1, [tooDeep]: 1 }, unset: [tooDeep, tooLong] })).toEqual([
      { path: `set.${tooLong}`, message: `must be at most ${patchPathChars} characters` },
      { path: `set.${tooDeep}`, message: `must have at most ${patchPathSegments} segments, custom included` },
      { path: "unset.0", message: `must have at most ${patchPathSegments} segments, custom included` },
      { path: "unset.1", message: `must be at most ${patchPathChars} characters` },
    ]);
  });

  it("bounds a set value's depth together with its path's, without recursion", () => {
    const rule = `must leave custom at most ${customDepth} levels deep, the path's own levels included`;
    // custom.a.b holds the value two levels down: custom and custom.a are levels 1 and 2.
    expect(issues(schema, { set: { "custom.a.b": nested(customDepth - 2), "custom.c": nested(customDepth - 1) } })).toEqual([]);
    expect(issues(schema, { set: { "custom.a.b": nested(customDepth - 1), "custom.c": nested(customDepth) } })).toEqual([
      { path: "set.custom.a.b", message: rule },
      { path: "set.custom.c", message: rule },
    ]);
    expect(issues(schema, { set: { "custom.deep": nested(20_000), "custom.array": JSON.parse("[".repeat(300_000) + "]".repeat(300_000)) } })).toEqual([
      { path: "set.custom.deep", message: rule },
      { path: "set.custom.array", message: rule },
    ]);
  });

  it("caps the serialized size of set", () => {
    const value = (bytes: number) => ({ "custom.s": "x".repeat(bytes - JSON.stringify({ "custom.s": "" }).length) });
    expect(issues(schema, { set: value(patchSetBytes) })).toEqual([]);
    expect(issues(schema, { set: value(patchSetBytes + 1) })).toEqual([{ path: "set", message: `must be at most ${patchSetBytes / 1024} KB serialized` }]);
  });
});

describe("overlapping paths, found by sorting and comparing neighbours", () => {
  it("keeps custom.a-b apart from custom.a and custom.a.b, whatever the order sent", () => {
    const paths = ["custom.a", "custom.a-b", "custom.a.b"];
    for (const order of [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]) {
      const set = Object.fromEntries(order.map((i) => [paths[i], 1]));
      expect(issues(patchObjectBody, { set }), JSON.stringify(set)).toEqual([{ path: "set.custom.a.b", message: "conflicts with custom.a" }]);
    }
  });

  it("names every path inside another, and the later of equal paths", () => {
    const body = { set: { "custom.a.b": 1, "custom.a.c": 1, "custom.a": 1, "custom.a0": 1, "custom.b": 1 }, unset: ["custom.b", "custom.a0", "custom.a0"] };
    expect(issues(patchObjectBody, body)).toEqual([
      { path: "set.custom.a.b", message: "conflicts with custom.a" },
      { path: "set.custom.a.c", message: "conflicts with custom.a" },
      { path: "unset.0", message: "conflicts with custom.b" },
      { path: "unset.1", message: "conflicts with custom.a0" },
      { path: "unset.2", message: "conflicts with custom.a0" },
    ]);
  });

  it("agrees with comparing every pair, on random bodies (fixed seed)", () => {
    let seed = 18;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const segment = () => ["a", "b", "a-b", "a.b", "ab", "b-"][random(6)] as string;
    const overlaps = (p: string, q: string) => p === q || q.startsWith(`${p}.`) || p.startsWith(`${q}.`);
    for (let round = 0; round < 300; round++) {
      const paths = Array.from({ length: 1 + random(12) }, () => ["custom", ...Array.from({ length: 1 + random(3) }, segment)].join("."));
      const set = Object.fromEntries(paths.slice(0, random(paths.length + 1)).map((p) => [p, 1]));
      const unset = paths.filter((p) => !Object.hasOwn(set, p));
      const sent = [...Object.keys(set), ...unset];
      const flagged = new Map(issues(patchObjectBody, { set, unset }).map((i) => [i.path, i.message]));
      const fieldOf = (k: number) => (k < Object.keys(set).length ? `set.${sent[k]}` : `unset.${k - Object.keys(set).length}`);
      const kept = sent.filter((_, k) => !flagged.has(fieldOf(k)));
      // What is kept overlaps nothing else kept; each refused path overlaps the kept path it names.
      for (const [i, p] of kept.entries()) for (const q of kept.slice(i + 1)) expect(overlaps(p, q), `${p} / ${q} in ${sent.join(" ")}`).toBe(false);
      sent.forEach((p, k) => {
        const message = flagged.get(fieldOf(k));
        if (message === undefined) return;
        const named = message.replace("conflicts with ", "");
        expect(kept.includes(named) && overlaps(named, p), `${p}: ${message} in ${sent.join(" ")}`).toBe(true);
      });
    }
  });
});
