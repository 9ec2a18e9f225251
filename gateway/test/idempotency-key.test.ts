import { describe, expect, it } from "vitest";
import type { Operator } from "@feeds/proto/feeds/identity/v1/identity";
import type { Tenant } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { canonicalJson, fingerprintOf, keyOf, principalOf, scopeHash, type Principal } from "../src/idempotency-key.js";
import { keeps } from "../src/idempotency.js";

// The pure half of Idempotency-Key: which keys are valid, whose scope a key lives in, and when
// two requests are the same request.

/** The 400 a key gets, or the key. */
function checked(value: string | string[] | undefined, rawHeaders: string[] = value === undefined ? [] : ["Idempotency-Key", String(value)]) {
  try {
    return { key: keyOf(value, rawHeaders) };
  } catch (e) {
    const err = e as { code: string; status: number; fields: { path: string }[] };
    return { code: err.code, status: err.status, fields: err.fields.map((f) => f.path) };
  }
}

describe("Idempotency-Key validation", () => {
  it("takes 1 to 255 printable ASCII characters", () => {
    for (const key of ["a", "x".repeat(255), "order 42/retry#1", " !~", "550e8400-e29b-41d4-a716-446655440000"]) {
      expect(checked(key)).toEqual({ key });
    }
  });

  it("answers 400 VALIDATION_FAILED naming the header for anything else", () => {
    const refused = { code: "VALIDATION_FAILED", status: 400, fields: ["Idempotency-Key"] };
    for (const key of ["", "x".repeat(256), "caf\u00e9", "tab\there", "nul\u0000", "new\nline", "\u{1F600}", "del\u007f"]) {
      expect(checked(key), JSON.stringify(key)).toEqual(refused);
    }
  });

  it("refuses a repeated header, even when Node joined two valid values into one", () => {
    expect(checked("a, b", ["Idempotency-Key", "a", "idempotency-key", "b"])).toMatchObject({ status: 400, fields: ["Idempotency-Key"] });
    expect(checked(["a", "b"], [])).toMatchObject({ status: 400 });
    // One header whose value holds a comma is one key.
    expect(checked("a, b", ["Idempotency-Key", "a, b"])).toEqual({ key: "a, b" });
  });

  it("no header: no key", () => {
    expect(checked(undefined)).toEqual({ key: undefined });
  });
});

describe("canonical JSON", () => {
  it("sorts object keys at every level and keeps array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it("leaves undefined members out as JSON does, and writes null for undefined items", () => {
    expect(canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
    expect(canonicalJson(undefined)).toBe("null");
  });

  it("tells types apart", () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: "1" }));
    expect(canonicalJson({ a: true })).not.toBe(canonicalJson({ a: "true" }));
    expect(canonicalJson({})).not.toBe(canonicalJson([]));
  });

  it("handles keys that look like prototypes and strings that look like JSON", () => {
    const parsed = JSON.parse('{"__proto__":{"x":1},"k":"\\"}"}') as unknown;
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"x":1},"k":"\\"}"}');
  });

  it("does not overflow the stack on a body nested deeper than any call stack", () => {
    const deep = JSON.parse(`${"[".repeat(200_000)}${"]".repeat(200_000)}`) as unknown;
    expect(canonicalJson(deep)).toHaveLength(400_000);
  });
});

describe("fingerprint", () => {
  it("is the same for the same parsed query and body, whatever the key order", () => {
    expect(fingerprintOf({ owner: "a" }, { verb: "post", actor: "user:1" })).toBe(fingerprintOf({ owner: "a" }, { actor: "user:1", verb: "post" }));
  });

  it("differs when the body or the query differs", () => {
    const base = fingerprintOf({}, { verb: "post" });
    expect(fingerprintOf({}, { verb: "like" })).not.toBe(base);
    expect(fingerprintOf({ owner: "a" }, { verb: "post" })).not.toBe(base);
    expect(fingerprintOf({}, undefined)).not.toBe(fingerprintOf({}, {}));
  });
});

describe("scope", () => {
  const server: Principal = { tenantId: "t1", kind: "server" };
  const route = "/v1/feeds/:group/:id/activities";
  const params = { group: "user", id: "alice" };
  const base = scopeHash(server, "POST", route, params, "k");

  it("is a hex hash: no client string reaches Redis key structure", () => {
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(scopeHash(server, "POST", route, params, "{t:other}:*")).toMatch(/^[0-9a-f]{64}$/);
  });

  it("changes with the tenant, the principal, the method, the concrete path and the key", () => {
    const others = [
      scopeHash({ tenantId: "t2", kind: "server" }, "POST", route, params, "k"),
      scopeHash({ tenantId: "t1", kind: "user", userId: "alice" }, "POST", route, params, "k"),
      scopeHash({ tenantId: "t1", kind: "user", userId: "bob" }, "POST", route, params, "k"),
      scopeHash({ tenantId: "t1", kind: "operator", operatorId: "alice" }, "POST", route, params, "k"),
      scopeHash(server, "PUT", route, params, "k"),
      scopeHash(server, "POST", route, { group: "user", id: "bob" }, "k"),
      scopeHash(server, "POST", "/v1/feeds/:group/:id/follows", params, "k"),
      scopeHash(server, "POST", route, params, "k2"),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
  });

  it("does not let one part's text slide into the next", () => {
    const a = scopeHash({ tenantId: "t1", kind: "user", userId: "a:b" }, "POST", route, params, "c");
    const b = scopeHash({ tenantId: "t1", kind: "user", userId: "a" }, "POST", route, params, "b:c");
    expect(a).not.toBe(b);
  });

  it("names the same concrete path whatever the order the params were read in", () => {
    expect(scopeHash(server, "POST", route, { id: "alice", group: "user" }, "k")).toBe(base);
  });
});

describe("principal", () => {
  const tenant = { id: "t1" } as Tenant;
  it("is the server, the user or the operator inside its tenant; none without a credential", () => {
    expect(principalOf({ tenant: { kind: "server", tenant }, operator: null })).toEqual({ tenantId: "t1", kind: "server" });
    expect(principalOf({ tenant: { kind: "user", tenant, userId: "u" }, operator: null })).toEqual({ tenantId: "t1", kind: "user", userId: "u" });
    const operator = { id: "o1", tenantId: "" } as Operator;
    expect(principalOf({ tenant: null, operator: { operator } })).toEqual({ tenantId: "", kind: "operator", operatorId: "o1" });
    expect(principalOf({ tenant: null, operator: null })).toBeNull();
  });
});

describe("what is kept", () => {
  it("2xx and 4xx but 401 and 429; never 5xx", () => {
    const kept = [200, 201, 202, 204, 400, 403, 404, 409, 413, 422];
    const notKept = [401, 429, 500, 502, 503, 504, 301, 304];
    expect(kept.filter(keeps)).toEqual(kept);
    expect(notKept.filter(keeps)).toEqual([]);
  });
});
