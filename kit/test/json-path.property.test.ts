import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RESERVED_PATH_SEGMENTS, applyPatch } from "../src/index.js";

// Random paths and values through the one walker: whatever a client sends, the built-in
// prototypes stay exactly as they were and every result is plain JSON.

/** Every own key of a prototype with its descriptor (functions compare by identity). */
const snapshot = (o: object) => new Map(Reflect.ownKeys(o).map((k) => [k, Reflect.getOwnPropertyDescriptor(o, k)]));
const prototypes = () => ({
  object: snapshot(Object.prototype),
  array: snapshot(Array.prototype),
  function: snapshot(Function.prototype),
  protoOfObject: Object.getPrototypeOf(Object.prototype) as unknown,
});

/** True when `v` is what JSON.parse could have produced: plain objects, arrays, JSON primitives. */
function isPlainJson(v: unknown): boolean {
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (Array.isArray(v)) return Object.getPrototypeOf(v) === Array.prototype && v.every(isPlainJson);
  if (typeof v !== "object" || Object.getPrototypeOf(v) !== Object.prototype) return false;
  return Reflect.ownKeys(v).every((k) => {
    const d = Reflect.getOwnPropertyDescriptor(v, k) as PropertyDescriptor;
    return typeof k === "string" && d.enumerable === true && "value" in d && isPlainJson(d.value);
  });
}

const hostileNames = [...RESERVED_PATH_SEGMENTS, "hasOwnProperty", "toString", "valueOf", "__defineGetter__", "__lookupSetter__", "length", "map", "call", "bind"];
/** Segments a path may hold: inherited names included, since only own properties count. */
const allowedSegment = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...hostileNames.filter((n) => !RESERVED_PATH_SEGMENTS.includes(n))) },
  { weight: 2, arbitrary: fc.constantFrom("a", "b", "0", "1", "$x", " ", "é", "😀", "a b") },
  { weight: 1, arbitrary: fc.nat(5).map(String) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 4 }).filter((g) => !g.includes(".")) },
);
const segment = fc.oneof(
  { weight: 3, arbitrary: allowedSegment },
  { weight: 2, arbitrary: fc.constantFrom(...RESERVED_PATH_SEGMENTS, "") },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 4 }) },
);
const root = fc.oneof({ weight: 9, arbitrary: fc.constant("custom") }, { weight: 1, arbitrary: fc.constantFrom("", "Custom", "__proto__", "custom ") });
/** Any path at all: reserved, empty and unicode segments, wrong roots. */
const anyPath = fc.tuple(root, fc.array(segment, { maxLength: 4 })).map(([r, s]) => [r, ...s].join("."));
/** Paths the walker applies (unless they overlap or cross a value that is not an object). */
const allowedPath = fc.array(allowedSegment, { minLength: 1, maxLength: 4 }).map((s) => ["custom", ...s].join("."));
/** Objects built with JSON.parse semantics: keys such as `__proto__` are own data properties. */
const entriesToObject = (entries: [string, unknown][]) => Object.fromEntries(entries) as Record<string, unknown>;
const value = fc.jsonValue({ maxDepth: 3 });
const doc = fc.array(fc.tuple(segment, value), { maxLength: 6 }).map(entriesToObject);
const patchOf = (path: fc.Arbitrary<string>) =>
  fc.tuple(fc.array(fc.tuple(path, value), { maxLength: 4 }).map(entriesToObject), fc.array(path, { maxLength: 3 }));
const patch = fc.oneof(patchOf(anyPath), patchOf(allowedPath));

/** Follows own properties of objects only (arrays are values); `undefined` when a step is missing. */
function ownAt(root: unknown, path: string): unknown {
  let node = root;
  for (const seg of path.split(".").slice(1)) {
    if (typeof node !== "object" || node === null || Array.isArray(node) || !Object.hasOwn(node, seg)) return undefined;
    node = (node as Record<string, unknown>)[seg];
  }
  return node;
}
/** Every set path reads back its value and every unset path is gone. */
const appliedAll = (value: unknown, s: Record<string, unknown>, u: string[]) =>
  Object.entries(s).every(([p, v]) => JSON.stringify(ownAt(value, p)) === JSON.stringify(v)) && u.every((p) => ownAt(value, p) === undefined);

const reservedIn = (p: string) => p.split(".").some((s) => RESERVED_PATH_SEGMENTS.includes(s));

describe("applyPatch under random paths and values", () => {
  it("never changes Object.prototype, Array.prototype or Function.prototype, and answers plain JSON or errors", () => {
    const before = prototypes();
    fc.assert(
      fc.property(doc, patch, (custom, [s, u]) => {
        const stored = JSON.stringify(custom);
        const r = applyPatch(custom, s, u);
        expect(prototypes()).toEqual(before);
        expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
        // The input is never changed; a result is plain JSON, or there are errors and no result.
        expect(JSON.stringify(custom)).toBe(stored);
        expect(r.value === null ? r.errors.length > 0 : isPlainJson(r.value) && r.errors.length === 0).toBe(true);
        expect(r.value === null || appliedAll(r.value, s, u)).toBe(true);
        // Any reserved segment, in any path, refuses the whole patch.
        expect([...Object.keys(s), ...u].some(reservedIn) && r.value !== null).toBe(false);
        expect(r.errors.every((e) => e.path === "unset" || e.path.startsWith("set.") || e.path.startsWith("unset."))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  }, 60_000);

  it("generates the hostile cases it claims to (reserved segments reach the walker)", () => {
    // Guards the generator: a property run that never sent a reserved segment would prove nothing.
    const samples = fc.sample(patch, { numRuns: 500, seed: 1 });
    const withReserved = samples.filter(([s, u]) => [...Object.keys(s), ...u].some(reservedIn)).length;
    const applied = samples.filter(([s, u]) => applyPatch({}, s, u).value !== null);
    // Applied patches that write through a name {} inherits (toString, hasOwnProperty, ...).
    const inherited = applied.filter(([s]) => Object.keys(s).some((p) => p.split(".").slice(1).some((x) => x in {})));
    expect(withReserved).toBeGreaterThan(100);
    expect(applied.length).toBeGreaterThan(100);
    expect(inherited.length).toBeGreaterThan(50);
  });
});
