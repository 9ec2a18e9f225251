import { describe, expect, it } from "vitest";
import { applyPatch, checkPatchPaths } from "../src/routes.js";

const paths = (errors: { path: string }[]) => errors.map((e) => e.path);

describe("checkPatchPaths", () => {
  it("accepts paths under custom.", () => {
    expect(checkPatchPaths(["custom.a", "custom.b.c", "custom.$x", "custom.a-b.@c"], ["custom.d", "custom.b.d"])).toEqual([]);
  });

  it("names every path outside custom. by where it was sent", () => {
    const errors = checkPatchPaths(["title", "custom", "custom.", "custom..a", "custom.a.", "customx.a", ".custom.a"], ["id", "custom.ok", "custom. "]);
    expect(paths(errors)).toEqual([
      "set.title",
      "set.custom",
      "set.custom.",
      "set.custom..a",
      "set.custom.a.",
      "set.customx.a",
      "set..custom.a",
      "unset.0",
    ]);
    expect(errors[0]?.message).toContain("custom.");
  });

  it("refuses overlapping paths in either order", () => {
    expect(paths(checkPatchPaths(["custom.a", "custom.a.b"], []))).toEqual(["set.custom.a.b"]);
    expect(paths(checkPatchPaths(["custom.a.b", "custom.a"], []))).toEqual(["set.custom.a"]);
    expect(paths(checkPatchPaths(["custom.a"], ["custom.a"]))).toEqual(["unset.0"]);
    expect(paths(checkPatchPaths([], ["custom.x", "custom.x"]))).toEqual(["unset.1"]);
    expect(paths(checkPatchPaths(["custom.a.b.c"], ["custom.a"]))).toEqual(["unset.0"]);
    expect(checkPatchPaths(["custom.a.b.c"], ["custom.a"])[0]?.message).toBe("conflicts with custom.a.b.c");
    // Siblings and shared prefixes of a name are not overlaps.
    expect(checkPatchPaths(["custom.a", "custom.ab", "custom.a-b.c"], ["custom.b.a"])).toEqual([]);
  });

  it("needs at least one path and at most 100 unset paths", () => {
    expect(checkPatchPaths([], [])).toEqual([{ path: "", message: "set or unset is required" }]);
    const many = Array.from({ length: 101 }, (_, i) => `custom.k${i}`);
    expect(paths(checkPatchPaths([], many))).toEqual(["unset"]);
    expect(paths(checkPatchPaths([`custom.${"x".repeat(1100)}`], []))).toEqual([`set.custom.${"x".repeat(1100)}`]);
  });
});

describe("applyPatch", () => {
  it("sets values, creating missing parents", () => {
    const { custom, errors } = applyPatch({ a: 1, m: { x: 1 } }, { "custom.a": { b: 2 }, "custom.m.y": [1], "custom.n.o.p": null }, []);
    expect(errors).toEqual([]);
    expect(custom).toEqual({ a: { b: 2 }, m: { x: 1, y: [1] }, n: { o: { p: null } } });
  });

  it("unsets fields; a missing one is a no-op", () => {
    const { custom, errors } = applyPatch({ a: 1, m: { x: 1, y: 2 }, s: "str" }, {}, ["custom.a", "custom.m.x", "custom.zz", "custom.q.r", "custom.s.len"]);
    expect(errors).toEqual([]);
    expect(custom).toEqual({ m: { y: 2 }, s: "str" });
  });

  it("refuses to set below a value that is not an object, naming the path", () => {
    const { errors } = applyPatch({ s: "str", arr: [1], nul: null, m: { n: 5 } }, { "custom.s.x": 1, "custom.arr.0": 2, "custom.nul.a": 3, "custom.m.n.o": 4, "custom.ok": 5 }, []);
    expect(errors).toEqual([
      { path: "set.custom.s.x", message: "custom.s is not an object" },
      { path: "set.custom.arr.0", message: "custom.arr is not an object" },
      { path: "set.custom.nul.a", message: "custom.nul is not an object" },
      { path: "set.custom.m.n.o", message: "custom.m.n is not an object" },
    ]);
  });

  it("keeps names such as __proto__ as plain data, never reaching a prototype", () => {
    const set = JSON.parse('{"custom.__proto__.polluted": true, "custom.constructor": 1}') as Record<string, unknown>;
    const { custom, errors } = applyPatch({}, set, []);
    expect(errors).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(custom)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(custom))).toEqual(JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}'));
    const removed = applyPatch(custom, {}, ["custom.__proto__"]).custom;
    expect(JSON.stringify(removed)).toBe('{"constructor":1}');
    // A path through an inherited name finds nothing to unset.
    expect(applyPatch({ a: 1 }, {}, ["custom.toString"]).custom).toEqual({ a: 1 });
    expect(applyPatch({}, { "custom.toString.x": 1 }, []).custom).toEqual({ toString: { x: 1 } });
  });
});
