import { describe, expect, it } from "vitest";
import { FeedsError, applyPatch, checkPatchPaths, patchCustomJson } from "../src/index.js";

const paths = (errors: { path: string }[]) => errors.map((e) => e.path);
/** Parses like a service does: JSON.parse defines `__proto__` as a plain own key. */
const json = (s: string) => JSON.parse(s) as Record<string, unknown>;

describe("checkPatchPaths", () => {
  it("accepts paths under custom.", () => {
    expect(checkPatchPaths(["custom.a", "custom.b.c", "custom.$x", "custom.a-b.@c", "custom.0", "custom.é.😀"], ["custom.d", "custom.b.d"])).toEqual([]);
  });

  it("names every path outside custom. by where it was sent", () => {
    const errors = checkPatchPaths(["title", "custom", "custom.", "custom..a", "custom.a.", "customx.a", ".custom.a"], ["id", "custom.ok", "custom. "]);
    expect(paths(errors)).toEqual(["set.title", "set.custom", "set.custom.", "set.custom..a", "set.custom.a.", "set.customx.a", "set..custom.a", "unset.0"]);
    expect(errors[0]?.message).toContain("custom.");
  });

  it("refuses __proto__, constructor and prototype segments anywhere in a path", () => {
    const set = ["custom.__proto__.x", "custom.constructor.prototype.x", "custom.a.prototype", "custom.ok"];
    const unset = ["custom.__proto__.hasOwnProperty", "custom.constructor", "custom.b.__proto__"];
    const errors = checkPatchPaths(set, unset);
    expect(paths(errors)).toEqual(["set.custom.__proto__.x", "set.custom.constructor.prototype.x", "set.custom.a.prototype", "unset.0", "unset.1", "unset.2"]);
    expect(errors.every((e) => e.message === "must not contain a __proto__, constructor or prototype segment")).toBe(true);
    // Only the whole segment: names that merely contain them are data.
    expect(checkPatchPaths(["custom.__proto__x", "custom.constructors", "custom.Prototype"], [])).toEqual([]);
  });

  it("refuses overlapping paths in either order", () => {
    expect(paths(checkPatchPaths(["custom.a", "custom.a.b"], []))).toEqual(["set.custom.a.b"]);
    expect(paths(checkPatchPaths(["custom.a.b", "custom.a"], []))).toEqual(["set.custom.a"]);
    expect(paths(checkPatchPaths(["custom.a"], ["custom.a"]))).toEqual(["unset.0"]);
    expect(paths(checkPatchPaths([], ["custom.x", "custom.x"]))).toEqual(["unset.1"]);
    expect(checkPatchPaths(["custom.a.b.c"], ["custom.a"])).toEqual([{ path: "unset.0", message: "conflicts with custom.a.b.c" }]);
    expect(checkPatchPaths(["custom.a", "custom.ab", "custom.a-b.c"], ["custom.b.a"])).toEqual([]);
  });

  it("at most 100 unset paths, each at most 1024 characters", () => {
    expect(paths(checkPatchPaths([], Array.from({ length: 101 }, (_, i) => `custom.k${i}`)))).toEqual(["unset"]);
    expect(paths(checkPatchPaths([`custom.${"x".repeat(1100)}`], []))).toEqual([`set.custom.${"x".repeat(1100)}`]);
  });
});

describe("applyPatch", () => {
  it("sets values on a copy, creating missing parents", () => {
    const input = { a: 1, m: { x: 1 } };
    const r = applyPatch(input, { "custom.a": { b: 2 }, "custom.m.y": [1], "custom.n.o.p": null }, []);
    expect(r).toEqual({ value: { a: { b: 2 }, m: { x: 1, y: [1] }, n: { o: { p: null } } }, errors: [] });
    expect(input).toEqual({ a: 1, m: { x: 1 } });
  });

  it("unsets fields; a missing one is a no-op", () => {
    const r = applyPatch({ a: 1, m: { x: 1, y: 2 }, s: "str" }, {}, ["custom.a", "custom.m.x", "custom.zz", "custom.q.r", "custom.s.len"]);
    expect(r).toEqual({ value: { m: { y: 2 }, s: "str" }, errors: [] });
  });

  it("refuses to set below a value that is not an object, naming the path, and applies nothing", () => {
    const r = applyPatch({ s: "str", arr: [1], nul: null, m: { n: 5 } }, { "custom.s.x": 1, "custom.arr.0": 2, "custom.nul.a": 3, "custom.m.n.o": 4, "custom.ok": 5 }, []);
    expect(r).toEqual({
      value: null,
      errors: [
        { path: "set.custom.s.x", message: "custom.s is not an object" },
        { path: "set.custom.arr.0", message: "custom.arr is not an object" },
        { path: "set.custom.nul.a", message: "custom.nul is not an object" },
        { path: "set.custom.m.n.o", message: "custom.m.n is not an object" },
      ],
    });
  });

  it("refuses prototype paths on its own, whatever a schema let through", () => {
    const r = applyPatch({}, json('{"custom.__proto__.polluted": "yes", "custom.constructor.prototype.polluted": "yes"}'), ["custom.__proto__.hasOwnProperty"]);
    expect(paths(r.errors)).toEqual(["set.custom.__proto__.polluted", "set.custom.constructor.prototype.polluted", "unset.0"]);
    expect(r.value).toBeNull();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(typeof Object.prototype.hasOwnProperty).toBe("function");
  });

  it("reads own properties only: inherited names are absent, set as plain data", () => {
    expect(applyPatch({ a: 1 }, {}, ["custom.toString", "custom.hasOwnProperty", "custom.valueOf.x"]).value).toEqual({ a: 1 });
    const r = applyPatch({}, { "custom.toString.x": 1, "custom.hasOwnProperty": 2, "custom.__defineSetter__.y": 3 }, []);
    expect(JSON.stringify(r.value)).toBe('{"toString":{"x":1},"hasOwnProperty":2,"__defineSetter__":{"y":3}}');
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  it("keeps a stored __proto__ key as plain data and never follows it", () => {
    const stored = json('{"__proto__": {"x": 1}, "k": 1}');
    const r = applyPatch(stored, { "custom.k": 2, "custom.n.m": 3 }, []);
    expect(JSON.stringify(r.value)).toBe('{"__proto__":{"x":1},"k":2,"n":{"m":3}}');
    expect(Object.getPrototypeOf(r.value)).toBe(Object.prototype);
  });
});

describe("patchCustomJson", () => {
  it("patches stored JSON and answers the new JSON", () => {
    expect(patchCustomJson('{"a":1,"b":2}', { "custom.c.d": true }, ["custom.b"])).toBe('{"a":1,"c":{"d":true}}');
    expect(patchCustomJson("", { "custom.a": 1 }, [])).toBe('{"a":1}');
  });

  it("throws VALIDATION_FAILED naming each bad path, or custom past 64 KB", () => {
    const bad = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e instanceof FeedsError ? { code: e.code, paths: paths(e.fields) } : e;
      }
      return "no error";
    };
    expect(bad(() => patchCustomJson("{}", { "custom.__proto__.x": 1, title: 1 }, ["custom.constructor"]))).toEqual({
      code: "VALIDATION_FAILED",
      paths: ["set.custom.__proto__.x", "set.title", "unset.0"],
    });
    expect(bad(() => patchCustomJson("{}", { "custom.a": "x".repeat(40_000), "custom.b": "y".repeat(40_000) }, []))).toEqual({
      code: "VALIDATION_FAILED",
      paths: ["custom"],
    });
  });
});
