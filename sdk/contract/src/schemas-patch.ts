import { z } from "zod";
import { requestLimits } from "./limits.js";
import { depthExceeds, jsonBytes } from "./schemas-custom.js";

// The one rule for the paths of every patch body (activities, objects, and the comments and users
// that follow): `set` keys and `unset` entries are `custom.` paths. The services' walker
// (`kit/src/json-path.ts`) holds the same rule again where the paths meet the stored object.
// Internal to the SDK: the schema modules use it, the package does not export it.
// Any user token may send a patch body before its activity is looked up, so the work here is
// bounded by counts checked first: keys, then characters and segments of each path.

const { patchSetKeys, patchUnsetPaths, patchPathChars, patchPathSegments, patchSetBytes, customDepth } = requestLimits;

/** Segments that name JavaScript's prototype machinery: never a field of a client path. */
const RESERVED_SEGMENTS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
const PATCH_PATH_RULE = "must be a path under custom. (e.g. custom.title)";
const RESERVED_SEGMENT_RULE = "must not contain a __proto__, constructor or prototype segment";
const CHARS_RULE = `must be at most ${patchPathChars} characters`;
const SEGMENTS_RULE = `must have at most ${patchPathSegments} segments, custom included`;
const DEPTH_RULE = `must leave custom at most ${customDepth} levels deep, the path's own levels included`;
const SET_BYTES_RULE = `must be at most ${patchSetBytes / 1024} KB serialized`;

export interface PatchPathRules {
  /** Whether a segment may start with `$` (activities: no; objects: yes). */
  dollarSegments: boolean;
}

export interface PatchPathIssue {
  path: (string | number)[];
  message: string;
}

/** `set` of a patch body: its keys are counted before zod walks them. */
export const patchSet = z.preprocess((raw: Record<string, unknown>, ctx) => {
  const value: unknown = raw; // the declared type is the schema's input; the value is any JSON
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length > patchSetKeys) {
    ctx.addIssue({ code: "custom", message: `at most ${patchSetKeys} keys` });
  }
  return value;
}, z.record(z.string(), z.unknown()));

/** `unset` of a patch body. */
export const patchUnset = z.array(z.string()).max(patchUnsetPaths, `at most ${patchUnsetPaths} paths`);

/** The segments of one path, or the cap or rule it breaks (caps first: they bound the split). */
function segmentsOf(path: string, rules: PatchPathRules): string[] | string {
  if (path.length > patchPathChars) return CHARS_RULE;
  const segments = path.split(".");
  if (segments.length > patchPathSegments) return SEGMENTS_RULE;
  const fields = segments.slice(1);
  if (segments[0] !== "custom" || fields.length === 0) return PATCH_PATH_RULE;
  if (fields.some((s) => s === "" || (!rules.dollarSegments && s.startsWith("$")))) return PATCH_PATH_RULE;
  if (fields.some((s) => RESERVED_SEGMENTS.has(s))) return RESERVED_SEGMENT_RULE;
  return segments;
}

interface CheckedPath {
  path: string;
  segments: string[];
  at: (string | number)[];
  order: number;
}

/** Segment by segment, so a path sorts right before the paths inside it (`a`, `a.b`, `a-b`). */
function compareSegments(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return (a[i] as string) < (b[i] as string) ? -1 : 1;
  return a.length - b.length;
}

const isPrefix = (p: readonly string[], q: readonly string[]) => p.length <= q.length && p.every((s, i) => s === q[i]);

/**
 * Paths that overlap an earlier one in segment order (the same field twice, or a field inside
 * another): once sorted, the paths inside a path follow it without a gap, so each is compared
 * with the last path that overlapped none before it. Of equal paths the first sent is kept.
 */
function overlapIssues(paths: CheckedPath[]): { order: number; issue: PatchPathIssue }[] {
  const sorted = [...paths].sort((a, b) => compareSegments(a.segments, b.segments) || a.order - b.order);
  const out: { order: number; issue: PatchPathIssue }[] = [];
  let root: CheckedPath | undefined;
  for (const p of sorted) {
    if (root !== undefined && isPrefix(root.segments, p.segments)) {
      out.push({ order: p.order, issue: { path: p.at, message: `conflicts with ${root.path}` } });
    } else root = p;
  }
  return out;
}

/**
 * Issues of one patch body whose `set` and `unset` passed their counts, each at `set.<key>` or
 * `unset.<index>` in the order sent: a path over its caps or outside `custom.`, an empty or
 * reserved segment, a `set` value that nests custom too deep, or a path that overlaps another,
 * since their order would be ambiguous. A body without those is checked for `set`'s size.
 */
export function patchPathIssues(
  set: Readonly<Record<string, unknown>> | undefined,
  unset: readonly string[] | undefined,
  rules: PatchPathRules,
): PatchPathIssue[] {
  const found: { order: number; issue: PatchPathIssue }[] = [];
  const checked: CheckedPath[] = [];
  const entries = [
    ...Object.entries(set ?? {}).map(([path, value]) => ({ path, value, at: ["set", path] })),
    ...(unset ?? []).map((path, i) => ({ path, value: undefined, at: ["unset", i] })),
  ];
  entries.forEach(({ path, value, at }, order) => {
    const segments = segmentsOf(path, rules);
    if (typeof segments === "string") found.push({ order, issue: { path: at, message: segments } });
    else if (depthExceeds(value, customDepth - (segments.length - 1))) found.push({ order, issue: { path: at, message: DEPTH_RULE } });
    else checked.push({ path, segments, at, order });
  });
  found.push(...overlapIssues(checked));
  if (found.length > 0) return found.sort((a, b) => a.order - b.order).map((f) => f.issue);
  // Every value's depth is bounded now, so serializing `set` cannot exhaust the stack.
  return set !== undefined && jsonBytes(set) > patchSetBytes ? [{ path: ["set"], message: SET_BYTES_RULE }] : [];
}
