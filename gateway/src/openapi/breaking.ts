// Breaking changes between two versions of the OpenAPI document, and the CHANGELOG notes that
// allow them. scripts/check-openapi.mjs runs it against the document of the previous commit.

type Json = Record<string, unknown>;
interface Doc {
  paths?: Record<string, Record<string, Json>>;
  components?: Json;
}
/** One change that breaks a client of `operationId`. */
export interface BreakingChange {
  operationId: string;
  change: string;
}

const methods = new Set(["get", "put", "post", "patch", "delete", "head", "options"]);

/** A node with its `$ref` (local, `#/...`) followed, through chains of refs. */
function deref(doc: Doc, node: unknown, seen = new Set<string>()): Json | undefined {
  if (node === null || typeof node !== "object") return undefined;
  const ref = (node as Json).$ref;
  if (typeof ref !== "string") return node as Json;
  if (seen.has(ref)) return undefined;
  seen.add(ref);
  let target: unknown = doc;
  for (const part of ref.replace(/^#\//, "").split("/")) target = (target as Json | undefined)?.[part];
  return deref(doc, target, seen);
}

function operationsOf(doc: Doc) {
  const out = new Map<string, { method: string; path: string; op: Json }>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      if (methods.has(method) && typeof op.operationId === "string") out.set(op.operationId, { method, path, op });
    }
  }
  return out;
}

/** The type a schema names (nullable shapes are `T|null`; allOf of one ref is that ref's). */
function typeOf(doc: Doc, s: Json | undefined): string | undefined {
  if (!s) return undefined;
  const one = Array.isArray(s.allOf) && s.allOf.length === 1 ? deref(doc, s.allOf[0]) : undefined;
  const t = typeof s.type === "string" ? s.type : one && typeof one.type === "string" ? one.type : undefined;
  return t === undefined ? undefined : s.nullable === true ? `${t}|null` : t;
}

/** Request side: a field that becomes required, or a new required one, breaks existing callers. */
function requestChanges(doc0: Doc, doc1: Doc, a: Json | undefined, b: Json | undefined, at: string, out: string[], depth = 0) {
  if (!b || depth > 20) return;
  const req0 = new Set(Array.isArray(a?.required) ? (a.required as string[]) : []);
  const props0 = (a?.properties ?? {}) as Json;
  const props1 = (b.properties ?? {}) as Json;
  for (const name of Array.isArray(b.required) ? (b.required as string[]) : []) {
    if (!req0.has(name)) out.push(`${at}${name} is ${name in props0 ? "now required" : "added as required"}`);
  }
  for (const [name, p1] of Object.entries(props1)) {
    const p0 = props0[name];
    if (p0 !== undefined) requestChanges(doc0, doc1, deref(doc0, p0), deref(doc1, p1), `${at}${name}.`, out, depth + 1);
  }
}

/** Answer side: a field removed or of another type breaks existing readers. */
function answerChanges(doc0: Doc, doc1: Doc, a: Json | undefined, b: Json | undefined, at: string, out: string[], depth = 0) {
  if (!a || depth > 20) return;
  const label = at.replace(/\.$/, "") || "body";
  if (!b) return void out.push(`answer ${label} removed`);
  const t0 = typeOf(doc0, a);
  const t1 = typeOf(doc1, b);
  if (t0 !== undefined && t1 !== undefined && t0 !== t1 && `${t0}|null` !== t1) out.push(`answer ${label} changed type from ${t0} to ${t1}`);
  const props1 = (b.properties ?? (Array.isArray(b.allOf) && b.allOf.length === 1 ? deref(doc1, b.allOf[0])?.properties : undefined) ?? {}) as Json;
  const props0 = (a.properties ?? (Array.isArray(a.allOf) && a.allOf.length === 1 ? deref(doc0, a.allOf[0])?.properties : undefined) ?? {}) as Json;
  for (const [name, p0] of Object.entries(props0)) {
    if (!(name in props1)) out.push(`answer field ${at}${name} removed`);
    else answerChanges(doc0, doc1, deref(doc0, p0), deref(doc1, props1[name]), `${at}${name}.`, out, depth + 1);
  }
  if (a.items !== undefined) answerChanges(doc0, doc1, deref(doc0, a.items), deref(doc1, b.items), `${at}[].`, out, depth + 1);
}

const jsonBody = (doc: Doc, holder: unknown) => {
  const content = deref(doc, holder)?.content as Record<string, { schema?: unknown }> | undefined;
  return deref(doc, content?.["application/json"]?.schema);
};

/** Every change from `before` to `after` that breaks a client of an existing operation. */
export function breakingChanges(before: Doc, after: Doc): BreakingChange[] {
  const found: BreakingChange[] = [];
  const ops1 = operationsOf(after);
  for (const [operationId, o0] of operationsOf(before)) {
    const o1 = ops1.get(operationId);
    if (!o1) {
      found.push({ operationId, change: `operation removed (${o0.method.toUpperCase()} ${o0.path})` });
      continue;
    }
    const changes: string[] = [];
    if (o0.method !== o1.method || o0.path !== o1.path) {
      changes.push(`moved from ${o0.method.toUpperCase()} ${o0.path} to ${o1.method.toUpperCase()} ${o1.path}`);
    }
    const params = (doc: Doc, op: Json) =>
      new Map(((op.parameters ?? []) as unknown[]).map((p) => deref(doc, p)).filter((p): p is Json => !!p).map((p) => [`${String(p.in)} ${String(p.name)}`, p]));
    const p0 = params(before, o0.op);
    for (const [key, p] of params(after, o1.op)) {
      if (p.required === true && p0.get(key)?.required !== true) changes.push(`parameter ${key} is ${p0.has(key) ? "now required" : "added as required"}`);
    }
    const body0 = deref(before, o0.op.requestBody);
    const body1 = deref(after, o1.op.requestBody);
    if (body1?.required === true && body0?.required !== true) changes.push("request body is now required");
    requestChanges(before, after, jsonBody(before, o0.op.requestBody), jsonBody(after, o1.op.requestBody), "request field ", changes);
    const answers0 = (o0.op.responses ?? {}) as Json;
    const answers1 = (o1.op.responses ?? {}) as Json;
    for (const status of Object.keys(answers0).filter((s) => /^2\d\d$/.test(s))) {
      if (!(status in answers1)) changes.push(`success status ${status} removed`);
      else answerChanges(before, after, jsonBody(before, answers0[status]), jsonBody(after, answers1[status]), "", changes);
    }
    for (const change of changes) found.push({ operationId, change });
  }
  return found;
}

/**
 * The operationIds the CHANGELOG's Unreleased section names on a line saying BREAKING:
 * `- BREAKING: \`follow\` answers 201 only …`.
 */
export function notedBreaks(changelog: string): Set<string> {
  const start = changelog.search(/^## \[?Unreleased\]?/m);
  if (start < 0) return new Set();
  const rest = changelog.slice(start).split("\n").slice(1);
  const end = rest.findIndex((line) => /^## /.test(line));
  const section = end < 0 ? rest : rest.slice(0, end);
  const out = new Set<string>();
  for (const line of section.filter((l) => l.includes("BREAKING"))) {
    for (const m of line.matchAll(/`(\w+)`/g)) if (m[1] !== undefined) out.add(m[1]);
  }
  return out;
}
