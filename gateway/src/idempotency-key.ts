import { createHash } from "node:crypto";
import { validationFailed } from "@feeds/kit";
import type { Operator } from "@feeds/proto/feeds/identity/v1/identity";
import type { TenantAuth } from "./auth.js";

// The pure half of Idempotency-Key (idempotency.ts keeps the records): what a valid key is, whose
// it is, and what makes two requests "the same request".

/** Contract section 6: 1 to 255 printable ASCII characters (space to tilde). */
export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const FIELD = "Idempotency-Key";

/**
 * The key of a write, from its headers: none (undefined), or a valid one; anything else (empty,
 * longer than 255, a character outside printable ASCII, the header repeated) is a 400 naming the
 * header. `rawHeaders` tells a repeated header from one value (Node joins repeats with ", ").
 */
export function keyOf(value: string | string[] | undefined, rawHeaders: string[]): string | undefined {
  if (value === undefined) return undefined;
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === "idempotency-key") count++;
  const fail = (message: string) => validationFailed([{ path: FIELD, message }], `invalid ${FIELD}: ${message}`);
  if (count > 1 || Array.isArray(value)) throw fail("give the header once");
  if (!IDEMPOTENCY_KEY.test(value)) throw fail("must be 1 to 255 printable ASCII characters");
  return value;
}

/** Who holds a key: the credential's principal inside its tenant. */
export type Principal =
  | { tenantId: string; kind: "server" }
  | { tenantId: string; kind: "user"; userId: string }
  | { tenantId: string; kind: "operator"; operatorId: string };

/**
 * The principal of an authorized request; null without a credential (login, invite acceptance:
 * no one to scope a key to). A staff operator has no tenant: its tenant part is "".
 */
export function principalOf(auth: { tenant: TenantAuth | null; operator: { operator: Operator } | null }): Principal | null {
  if (auth.tenant) {
    const tenantId = auth.tenant.tenant.id;
    return auth.tenant.kind === "user" ? { tenantId, kind: "user", userId: auth.tenant.userId } : { tenantId, kind: "server" };
  }
  if (auth.operator) return { tenantId: auth.operator.operator.tenantId, kind: "operator", operatorId: auth.operator.operator.id };
  return null;
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/**
 * The hash naming one key's record: principal, method, route and its decoded parameters (the
 * concrete path, however the client spelled it), and the key. A JSON array is unambiguous, so no
 * two different scopes hash alike by delimiter games; only the hash reaches Redis key structure.
 */
export function scopeHash(p: Principal, method: string, route: string, params: unknown, key: string): string {
  const who = p.kind === "user" ? p.userId : p.kind === "operator" ? p.operatorId : "";
  return sha256(JSON.stringify([p.tenantId, p.kind, who, method, route, canonicalJson(params), key]));
}

/** What makes a repeat the same request: its parsed query and JSON body, canonical. */
export const fingerprintOf = (query: unknown, body: unknown): string => sha256(canonicalJson({ query, body }));

class Raw {
  constructor(readonly text: string) {}
}

/**
 * JSON with object keys sorted at every level (undefined members left out, as JSON.stringify
 * does), so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one request. Iterative: a body nested
 * deeper than the call stack (the parser accepts it) must not throw here.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v instanceof Raw) out.push(v.text);
    else if (Array.isArray(v)) {
      stack.push(new Raw("]"));
      for (let i = v.length - 1; i >= 0; i--) {
        const item: unknown = v[i];
        stack.push(item === undefined || typeof item === "function" ? null : item);
        if (i > 0) stack.push(new Raw(","));
      }
      stack.push(new Raw("["));
    } else if (v !== null && typeof v === "object") {
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o)
        .filter((k) => o[k] !== undefined && typeof o[k] !== "function")
        .sort();
      stack.push(new Raw("}"));
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i] as string;
        stack.push(o[k]);
        stack.push(new Raw(`${i > 0 ? "," : ""}${JSON.stringify(k)}:`));
      }
      stack.push(new Raw("{"));
    } else out.push(JSON.stringify(v) ?? "null");
  }
  return out.join("");
}
