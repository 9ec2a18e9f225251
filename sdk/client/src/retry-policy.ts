import type { CallSpec } from "./http.js";

// Which requests the client may send twice. A retry follows an answer that may hide a done write
// (INTERNAL: the server may have committed before failing; a network error after the request
// left), so only a request whose repeat cannot make a second thing is retried.

const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);
const KEYED_METHODS: ReadonlySet<string> = new Set(["POST", "PATCH"]);

function headerOf(headers: CallSpec["headers"], name: string): string | undefined {
  for (const [k, v] of Object.entries(headers ?? {})) if (k.toLowerCase() === name && v !== undefined) return v;
  return undefined;
}

/** A POST of an activity the server deduplicates by `foreign_id` + `time` (interface 5.3). */
function carriesDedupeIdentity(body: unknown): boolean {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const b = body as Record<string, unknown>;
  return typeof b["foreign_id"] === "string" && b["foreign_id"] !== "" && typeof b["time"] === "string" && b["time"] !== "";
}

/** True when sending `spec` twice has the effect of sending it once. */
export function isRetrySafe(spec: CallSpec): boolean {
  const method = spec.method.toUpperCase();
  if (IDEMPOTENT_METHODS.has(method)) return true;
  if (headerOf(spec.headers, "idempotency-key") !== undefined) return true;
  return method === "POST" && carriesDedupeIdentity(spec.body);
}

/**
 * The spec with its Idempotency-Key: `key` when given (any write), none when false, otherwise (a
 * POST or PATCH without one) a fresh random key that every attempt of this call reuses. GET and
 * HEAD carry none (the server ignores it there).
 */
export function withIdempotencyKey(spec: CallSpec, key: string | false | undefined): CallSpec {
  const method = spec.method.toUpperCase();
  if (key === false || method === "GET" || method === "HEAD" || headerOf(spec.headers, "idempotency-key") !== undefined) return spec;
  if (key === undefined && !KEYED_METHODS.has(method)) return spec;
  return { ...spec, headers: { ...spec.headers, "idempotency-key": key ?? crypto.randomUUID() } };
}
