// The one rule for the paths of every patch body (activities, objects, and the comments and users
// that follow): `set` keys and `unset` entries are `custom.` paths. The services' walker
// (`kit/src/json-path.ts`) holds the same rule again where the paths meet the stored object.
// Internal to the SDK: the schema modules use it, the package does not export it.

/** Segments that name JavaScript's prototype machinery: never a field of a client path. */
const RESERVED_SEGMENTS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
const MAX_PATH_LENGTH = 1024;
const PATCH_PATH_RULE = "must be a path under custom. (e.g. custom.title)";
const RESERVED_SEGMENT_RULE = "must not contain a __proto__, constructor or prototype segment";

export interface PatchPathRules {
  /** Whether a segment may start with `$` (activities: no; objects: yes). */
  dollarSegments: boolean;
}

export interface PatchPathIssue {
  path: (string | number)[];
  message: string;
}

/** The rule one path breaks, or null. */
function pathRuleBroken(path: string, rules: PatchPathRules): string | null {
  const segments = path.split(".");
  const fields = segments.slice(1);
  if (path.length > MAX_PATH_LENGTH || segments[0] !== "custom" || fields.length === 0) return PATCH_PATH_RULE;
  if (fields.some((s) => s === "" || (!rules.dollarSegments && s.startsWith("$")))) return PATCH_PATH_RULE;
  if (fields.some((s) => RESERVED_SEGMENTS.has(s))) return RESERVED_SEGMENT_RULE;
  return null;
}

/**
 * Issues of the paths of one patch body, each at `set.<key>` or `unset.<index>`: a path outside
 * `custom.`, an empty or reserved segment, or two paths that overlap (the same field twice, or a
 * field and one inside it), since their order would be ambiguous.
 */
export function patchPathIssues(
  set: Readonly<Record<string, unknown>> | undefined,
  unset: readonly string[] | undefined,
  rules: PatchPathRules,
): PatchPathIssue[] {
  const issues: PatchPathIssue[] = [];
  const fields = new Set<string>();
  const parents = new Map<string, string>(); // a field above some path → that path
  const entries = [
    ...Object.keys(set ?? {}).map((path) => ({ path, at: ["set", path] })),
    ...(unset ?? []).map((path, i) => ({ path, at: ["unset", i] })),
  ];
  for (const { path, at } of entries) {
    const broken = pathRuleBroken(path, rules);
    if (broken !== null) {
      issues.push({ path: at, message: broken });
      continue;
    }
    const segments = path.split(".");
    const prefixes = segments.slice(2).map((_, k) => segments.slice(0, k + 2).join("."));
    const clash = fields.has(path) ? path : (parents.get(path) ?? prefixes.find((q) => fields.has(q)));
    if (clash !== undefined) {
      issues.push({ path: at, message: `conflicts with ${clash}` });
      continue;
    }
    fields.add(path);
    for (const q of prefixes) if (!parents.has(q)) parents.set(q, path);
  }
  return issues;
}
