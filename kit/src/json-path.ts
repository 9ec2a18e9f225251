import { requestLimits } from "@feeds/contract";
import { validationFailed, type FieldError } from "./errors.js";
import { MAX_CUSTOM_BYTES } from "./ids.js";

// The one walker for client-given paths into stored JSON: every patch (activities, objects, and
// the comments and users that follow) goes through it. Three guards: segments naming prototype
// machinery are refused; reads see own properties only (`Object.hasOwn`), so a walk never steps
// into an inherited `__proto__` or `toString` (either guard alone keeps it out of a prototype);
// writes define own data properties (`Object.defineProperty`), so a key is data and never runs
// the `__proto__` setter. Ordinary objects rather than null-prototype ones: results leave as JSON
// and are compared and spread like any parsed JSON, and the guards already make them safe.

type JsonObject = Record<string, unknown>;

/** Segments that name JavaScript's prototype machinery: never a field of a client path. */
export const RESERVED_PATH_SEGMENTS: readonly string[] = ["__proto__", "constructor", "prototype"];
export const MAX_PATCH_PATH_LENGTH = requestLimits.patchPathChars;
export const MAX_UNSET_PATHS = requestLimits.patchUnsetPaths;
export const PATCH_PATH_RULE = "must be a path under custom. (e.g. custom.title)";
export const RESERVED_SEGMENT_RULE = "must not contain a __proto__, constructor or prototype segment";

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const own = (o: JsonObject, k: string): unknown => (Object.hasOwn(o, k) ? o[k] : undefined);
const define = (o: JsonObject, k: string, value: unknown) =>
  Object.defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });
/** A deep copy that is plain JSON, whatever it was given (JSON.parse defines, never assigns). */
const jsonCopy = (v: unknown): unknown => JSON.parse(JSON.stringify(v) ?? "null");

/** The segments below `custom` of a patch path (`custom.a.b` → ["a", "b"]), or the rule it breaks. */
export function patchPathSegments(path: string): string[] | string {
  const segments = path.split(".");
  if (path.length > MAX_PATCH_PATH_LENGTH || segments.length < 2 || segments[0] !== "custom" || segments.includes("")) {
    return PATCH_PATH_RULE;
  }
  if (segments.some((s) => RESERVED_PATH_SEGMENTS.includes(s))) return RESERVED_SEGMENT_RULE;
  return segments.slice(1);
}

/**
 * The rules of a patch that need no stored data: every path is a valid `custom.` path, at most
 * 100 unset paths, and no two paths overlap (the same field twice, or a field and one inside it),
 * since their order would be ambiguous. Errors name `set.<key>` or `unset.<index>`.
 */
export function checkPatchPaths(setKeys: readonly string[], unset: readonly string[]): FieldError[] {
  const errors: FieldError[] = [];
  if (unset.length > MAX_UNSET_PATHS) errors.push({ path: "unset", message: `at most ${MAX_UNSET_PATHS} paths` });
  const fields = new Set<string>();
  const parents = new Map<string, string>(); // a field above some path → that path
  const entries = [
    ...setKeys.map((path) => ({ path, at: `set.${path}` })),
    ...unset.map((path, i) => ({ path, at: `unset.${i}` })),
  ];
  for (const { path, at } of entries) {
    const segments = patchPathSegments(path);
    if (typeof segments === "string") {
      errors.push({ path: at, message: segments });
      continue;
    }
    const prefixes = segments.slice(0, -1).map((_, k) => ["custom", ...segments.slice(0, k + 1)].join("."));
    const clash = fields.has(path) ? path : (parents.get(path) ?? prefixes.find((p) => fields.has(p)));
    if (clash !== undefined) {
      errors.push({ path: at, message: `conflicts with ${clash}` });
      continue;
    }
    fields.add(path);
    for (const p of prefixes) if (!parents.has(p)) parents.set(p, path);
  }
  return errors;
}

/** A patched copy, or the errors naming every path that could not be applied (nothing is). */
export type PatchResult = { value: JsonObject; errors: [] } | { value: null; errors: FieldError[] };

/**
 * Applies `set` ("custom.<path>" → value) and `unset` ("custom.<path>") to a copy of `custom`;
 * the input is left as it was. `set` creates missing parents; `unset` of a missing field is a
 * no-op; arrays are values, never traversed. A broken path rule (see `checkPatchPaths`), or a
 * set below a value that is not an object, is an error naming the path.
 */
export function applyPatch(custom: Readonly<JsonObject>, set: Readonly<JsonObject>, unset: readonly string[]): PatchResult {
  const pathErrors = checkPatchPaths(Object.keys(set), unset);
  if (pathErrors.length) return { value: null, errors: pathErrors };
  const value = jsonCopy(custom) as JsonObject;
  const errors: FieldError[] = [];
  for (const [path, v] of Object.entries(set)) {
    const segments = patchPathSegments(path) as string[];
    const leaf = segments.pop() as string;
    let node: JsonObject | null = value;
    for (const [i, segment] of segments.entries()) {
      const child = own(node, segment);
      if (child === undefined) {
        const created: JsonObject = {};
        define(node, segment, created);
        node = created;
      } else if (isObject(child)) {
        node = child;
      } else {
        errors.push({ path: `set.${path}`, message: `${["custom", ...segments.slice(0, i + 1)].join(".")} is not an object` });
        node = null;
        break;
      }
    }
    if (node) define(node, leaf, jsonCopy(v));
  }
  for (const path of unset) {
    const segments = patchPathSegments(path) as string[];
    const leaf = segments.pop() as string;
    let node: JsonObject | null = value;
    for (const segment of segments) {
      const child = own(node, segment);
      node = isObject(child) ? child : null;
      if (!node) break;
    }
    if (node && Object.hasOwn(node, leaf)) delete node[leaf];
  }
  return errors.length ? { value: null, errors } : { value, errors: [] };
}

/**
 * A patch of stored custom JSON, as every service applies it: answers the new JSON, or throws
 * VALIDATION_FAILED naming each bad path, or `custom` when the result outgrows 64 KB.
 */
export function patchCustomJson(customJson: string, set: Readonly<JsonObject>, unset: readonly string[]): string {
  const stored: unknown = JSON.parse(customJson || "{}");
  const patched = applyPatch(isObject(stored) ? stored : {}, set, unset);
  if (patched.value === null) throw validationFailed(patched.errors);
  const json = JSON.stringify(patched.value);
  if (Buffer.byteLength(json) > MAX_CUSTOM_BYTES) {
    throw validationFailed([{ path: "custom", message: "must be at most 64 KB after the patch" }]);
  }
  return json;
}
