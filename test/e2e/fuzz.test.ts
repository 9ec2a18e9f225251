import SwaggerParser from "@apidevtools/swagger-parser";
import { describe, expect, it } from "vitest";
import { http, newIp, newOperator, newTenant, staffToken, type RawAnswer } from "../support/api.js";

// Every operation the route table knows (from /openapi.json), under each kind of credential,
// with hostile path values, query values and bodies from a fixed seed: no answer is a 5xx, and
// every error is the interface's envelope (section 7) with the status its code has. A failure
// prints the request that caused it, so it can be sent again by hand.

type Schema = { type?: string; properties?: Record<string, Schema>; required?: string[]; items?: Schema; enum?: unknown[]; anyOf?: Schema[]; oneOf?: Schema[]; nullable?: boolean; format?: string; minimum?: number };
type Operation = { parameters?: { name: string; in: "path" | "query" | "header"; schema: Schema }[]; requestBody?: { content: { "application/json": { schema: Schema } } } };

/** mulberry32: a small PRNG, so that every run sends the same requests. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T };
}

const STATUS_OF: Record<string, number> = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  CONTENT_REJECTED: 422,
  RATE_LIMITED: 429,
};

/** Hostile strings for path and query values (sent percent-encoded, but for the raw ones). */
const HOSTILE = [
  "",
  " ",
  "a".repeat(129),
  "a".repeat(3000),
  "__proto__",
  "constructor",
  "prototype",
  "..",
  "../../etc/passwd",
  "\u0000",
  "x\r\ny: z",
  "☃",
  "😀".repeat(40),
  "00000000-0000-0000-0000-000000000000",
  "<script>alert(1)</script>",
  "'; drop table x; --",
  "1e309",
  "-1",
  "NaN",
  "null",
  "[object Object]",
  "user:",
  ":",
  "a:b:c",
  "$where",
  "{\"$gt\":\"\"}",
  "custom.__proto__.x",
] as const;
/** Sent as they are: malformed percent-encodings and separators. */
const RAW = ["%", "%ZZ", "%c0%af", "a%2Fb", "a;b=c", "%E0%A4%A"] as const;

/** Hostile JSON values for a field. */
function hostileJson(r: ReturnType<typeof prng>): unknown {
  const deep = (n: number): unknown => (n === 0 ? 1 : { a: deep(n - 1) });
  return r.pick<() => unknown>([
    () => null,
    () => 1e308,
    () => -1,
    () => 2 ** 53 + 1,
    () => "",
    () => "x".repeat(70_000),
    () => [],
    () => ({}),
    () => JSON.parse('{"__proto__":{"polluted":true}}'),
    () => ({ constructor: { prototype: { polluted: true } } }),
    () => deep(200),
    () => true,
    () => r.pick(HOSTILE),
    () => [r.pick(HOSTILE), null, {}],
    () => ({ "custom.__proto__.x": 1, "custom.a": { $set: 1 } }),
  ])();
}

/** A value that fits `s` as far as a plain reading of the schema goes. */
function sample(s: Schema | undefined, depth = 0): unknown {
  if (!s || depth > 6) return null;
  const alt = s.anyOf ?? s.oneOf;
  if (alt?.length) return sample(alt[0], depth + 1);
  if (s.enum?.length) return s.enum[0];
  switch (s.type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const k of s.required ?? []) out[k] = sample(s.properties?.[k], depth + 1);
      return out;
    }
    case "array":
      return [sample(s.items, depth + 1)];
    case "integer":
    case "number":
      return Math.max(1, s.minimum ?? 1);
    case "boolean":
      return true;
    case "string":
      return s.format === "date-time" ? new Date().toISOString() : s.format === "email" ? "a@example.com" : "x";
    case undefined:
    default:
      return {};
  }
}

/** The body sample with one field (at any depth) replaced, removed, or an unknown key added. */
function mutateBody(r: ReturnType<typeof prng>, body: unknown): { json?: unknown; raw?: string } {
  const choice = r.next();
  if (choice < 0.1) return { raw: r.pick(["{", "[]", "null", '"s"', "1", "", "{\"a\":1,}", "[".repeat(100_000)]) };
  if (choice < 0.2) return { json: hostileJson(r) };
  const copy = structuredClone(body) as Record<string, unknown>;
  const paths: Record<string, unknown>[] = [];
  const walk = (o: unknown) => {
    if (o !== null && typeof o === "object" && !Array.isArray(o)) {
      paths.push(o as Record<string, unknown>);
      Object.values(o).forEach(walk);
    } else if (Array.isArray(o)) o.forEach(walk);
  };
  walk(copy);
  const target = paths.length ? r.pick(paths) : copy;
  const keys = Object.keys(target);
  if (keys.length && r.next() < 0.8) {
    const k = r.pick(keys);
    if (r.next() < 0.2) delete target[k];
    else target[k] = hostileJson(r);
  } else {
    target[r.pick(["__proto__", "constructor", "custom", "x".repeat(300), "$where"])] = hostileJson(r);
  }
  return { json: copy };
}

interface Credential {
  name: string;
  token?: string;
}

/** One request's line, for the failure list. */
const describeRequest = (method: string, path: string, body: { json?: unknown; raw?: string } | undefined, cred: string) =>
  `${cred} ${method} ${path.slice(0, 300)} ${body?.raw !== undefined ? `raw ${JSON.stringify(body.raw.slice(0, 200))}` : JSON.stringify(body?.json)?.slice(0, 300) ?? ""}`;

/** What is wrong with an answer, or null: a 5xx, or an error outside the envelope. */
function wrongWith(a: RawAnswer): string | null {
  if (a.status >= 500) return `status ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`;
  if (a.status < 400) return null;
  const e = (a.body as { error?: Record<string, unknown> } | null)?.error;
  if (!e || typeof e.code !== "string" || typeof e.message !== "string" || typeof e.requestId !== "string") {
    return `status ${a.status} outside the envelope: ${JSON.stringify(a.body).slice(0, 300)}`;
  }
  if (STATUS_OF[e.code] !== a.status) return `status ${a.status} with code ${e.code}`;
  if (e.requestId !== a.headers.get("x-request-id")) return "requestId is not the x-request-id header";
  if ((e.code === "VALIDATION_FAILED") !== Array.isArray(e.fields)) return `fields ${JSON.stringify(e.fields)} with code ${e.code}`;
  if (e.code === "RATE_LIMITED" && !/^\d+$/.test(a.headers.get("retry-after") ?? "")) return "429 without an integer Retry-After";
  return null;
}

/** Runs `tasks` with at most `n` at once. */
async function pool(n: number, tasks: (() => Promise<void>)[]): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < tasks.length) await (tasks[i++] as () => Promise<void>)();
  }));
}

/** Operations that end the credentials the rest of the run uses: sent last. */
const ENDS_CREDENTIALS = /rotate-secret|suspend|logout|revoke-tokens|disable|team\/\{id\}$/;

describe("fuzz", () => {
  it("every operation, every credential kind, hostile paths, queries and bodies: no 5xx, every error in the envelope", { timeout: 600_000 }, async () => {
    // Dereferenced: parameters, bodies and their named shapes in place of their $refs.
    const doc = (await SwaggerParser.dereference(structuredClone((await http("GET", "/openapi.json")).body))) as unknown as {
      paths: Record<string, Record<string, Operation>>;
    };
    const t = await newTenant({ rate_limit_per_minute: 10_000_000 });
    const [owner, member] = [await newOperator(t.id, "owner"), await newOperator(t.id, "member")];
    const creds: Credential[] = [
      { name: "none" },
      { name: "garbage", token: "not.a.token" },
      { name: "server", token: await t.server() },
      { name: "user", token: await t.user("fuzz-user") },
      { name: "member", token: member.token },
      { name: "owner", token: owner.token },
      { name: "staff", token: await staffToken() },
    ];
    const r = prng(18_2026);
    const ops = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), op })))
      .sort((a, b) => Number(ENDS_CREDENTIALS.test(a.path)) - Number(ENDS_CREDENTIALS.test(b.path)));
    expect(ops.length).toBeGreaterThan(70);

    const failures: string[] = [];
    let sent = 0;
    // One task per operation, its requests one after another: the inputs are under test, not
    // races between writes of one tenant (a first upsert racing another answers 500 on
    // FerretDB v1, which does not retry it as MongoDB does: issue 19's store work).
    const tasks: (() => Promise<void>)[] = [];
    let requests = 0;
    for (const { path, method, op } of ops) {
      const steps: (() => Promise<void>)[] = [];
      const params = op.parameters ?? [];
      const bodySchema = op.requestBody?.content["application/json"].schema;
      const base = bodySchema ? sample(bodySchema) : undefined;
      for (const cred of creds) {
        for (let v = 0; v < 6; v++) {
          // v 0: every value benign; then one hostile path value, query value or body each.
          const hostileAt = v === 0 ? null : r.pick(["path", "query", "body"] as const);
          let url = path;
          for (const p of params.filter((x) => x.in === "path")) {
            const v0 = sample(p.schema);
            const benign = typeof v0 === "string" || typeof v0 === "number" ? String(v0) : "x";
            const value = hostileAt === "path" && r.next() < 0.7 ? (r.next() < 0.2 ? r.pick(RAW) : encodeURIComponent(r.pick(HOSTILE))) : encodeURIComponent(benign);
            url = url.replace(`{${p.name}}`, value);
          }
          const query: string[] = [];
          for (const p of params.filter((x) => x.in === "query")) {
            if (hostileAt === "query" && r.next() < 0.6) query.push(`${p.name}=${encodeURIComponent(r.pick([...HOSTILE, "0", "101", "1.5", "99999999999999999999"]))}`);
          }
          if (hostileAt === "query") query.push(r.pick(["limit=1&limit=2", "__proto__[x]=1", "next=%", "cursor=" + "A".repeat(5000)]));
          if (query.length) url += `?${query.join("&")}`;
          const body = bodySchema ? (hostileAt === "body" ? mutateBody(r, base) : { json: base }) : hostileAt === "body" && method !== "GET" ? mutateBody(r, {}) : undefined;
          requests++;
          steps.push(async () => {
            const a = await http(method, url, {
              ...(cred.token ? { token: cred.token } : {}),
              // Each request from an address of its own: per-address windows are not what is tested.
              ip: newIp(),
              ...(body?.raw !== undefined ? { rawBody: body.raw } : body?.json !== undefined ? { body: body.json } : {}),
            }).catch((e: Error) => ({ status: 0, headers: new Headers(), body: String(e) }) as RawAnswer);
            sent++;
            const wrong = a.status === 0 ? `no answer: ${String(a.body)}` : wrongWith(a);
            if (wrong) failures.push(`${describeRequest(method, url, body, cred.name)} → ${wrong}`);
          });
        }
      }
      tasks.push(async () => {
        for (const step of steps) await step();
      });
    }
    await pool(8, tasks);
    expect(failures.slice(0, 30), `${failures.length} of ${sent} answers wrong`).toEqual([]);
    expect(sent).toBe(requests);
  });
});
