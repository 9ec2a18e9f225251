import { createHash, randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { inject } from "vitest";
import { HttpClient, createServerToken, createUserToken } from "@feeds/node";
import { connectRedis, type RedisConn } from "@feeds/kit";

export const baseUrl = () => inject("baseUrl");

export interface RawAnswer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A fresh client address per caller (the test system trusts X-Forwarded-For). */
export const newIp = () => `10.${rand255()}.${rand255()}.${rand255()}`;
const rand255 = () => randomBytes(1)[0] ?? 1;

/**
 * One raw SDK client per base URL: no token of its own, no timeout (tests set their own), and
 * fetch's own `accept: *\/*` instead of the SDK's JSON default, so requests stay as they were.
 */
const rawClients = new Map<string, HttpClient>();
function rawClient(url: string): HttpClient {
  let c = rawClients.get(url);
  if (!c) {
    c = new HttpClient({ baseUrl: url, timeoutMs: 0, headers: { accept: "*/*" } });
    rawClients.set(url, c);
  }
  return c;
}

/**
 * One HTTP call through the SDK's raw request (one attempt, no retry), never throwing on a
 * status: tests assert on exact codes, headers and bodies. A request that gets no answer rejects
 * (with the SDK's FeedsApiError, status 0).
 */
export async function http<T = any>(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>; ip?: string; url?: string } = {},
): Promise<RawAnswer<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.ip) headers["x-forwarded-for"] = opts.ip;
  let body: string | undefined;
  if (opts.rawBody !== undefined) {
    body = opts.rawBody;
    headers["content-type"] ??= "application/json";
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] = "application/json";
  }
  // The body goes out verbatim as a string; the headers are exactly the ones built above.
  const res = await rawClient(opts.url ?? baseUrl()).raw<T>({ method, path, headers, body, auth: false });
  return { status: res.status, headers: res.headers, body: res.body };
}

/** The message of the gateway's overload guard's 429 (gateway/src/overload.ts). */
export const SHED_MESSAGE = "server busy, retry after the wait";

/**
 * `call` once, and again after Retry-After while the gateway sheds it (429 with the overload
 * guard's message), as a client does, at most `attempts` times in all; any other answer is
 * returned at once. For tests whose claim is about what a request answers once admitted, run
 * with the production shedding on a machine other work may load: a shed request did no work.
 */
export async function admitted<T = any>(call: () => Promise<RawAnswer<T>>, attempts = 5): Promise<RawAnswer<T>> {
  for (let i = 1; ; i++) {
    const res = await call();
    const shed = res.status === 429 && (res.body as { error?: { message?: unknown } } | undefined)?.error?.message === SHED_MESSAGE;
    if (!shed || i >= attempts) return res;
    await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after") ?? 1) * 1000));
  }
}

/** Asserts the interface's error envelope and answers its error. */
export function envelope(a: RawAnswer): { code: string; message: string; requestId: string; fields?: { path: string; message: string }[] } {
  const e = (a.body as { error?: any })?.error;
  if (!e || typeof e.code !== "string" || typeof e.message !== "string" || typeof e.requestId !== "string") {
    throw new Error(`not an error envelope (${a.status}): ${JSON.stringify(a.body)}`);
  }
  if (a.headers.get("x-request-id") !== e.requestId) throw new Error("requestId differs from x-request-id");
  return e;
}

const sessions = new Map<string, string>();

/**
 * The staff session is shared by every test file of a run through Redis, under the run's
 * namespace (dropped with it): logins are limited to 10 per minute per email, and each file is a
 * module of its own, so one login per file would exceed that once enough files run in a minute.
 */
async function sharedSession<T>(key: string, use: (redis: RedisConn["redis"], redisKey: string) => Promise<T>): Promise<T> {
  const conn = await systemRedis();
  try {
    return await use(conn.redis, conn.key("test", "staff-session", createHash("sha256").update(key).digest("hex").slice(0, 16)));
  } finally {
    await conn.close();
  }
}

/** The run's Redis as the system connects to it (a cluster too), in the run's namespace. */
export const systemRedis = (): Promise<RedisConn> => connectRedis({ REDIS_URL: inject("redisUrl"), FEEDS_NAMESPACE: inject("namespace") });

/** A key of a tenant's data in the run's namespace, as the system names it (its hash tag first:
 * kit's `RedisConn.tenantKey`). */
export const tenantRedisKey = (tenantId: string, ...parts: string[]) => `${inject("namespace")}:{t:${tenantId}}:${parts.join(":")}`;

/** A session of the bootstrap staff operator (one login per system for the whole run). */
export async function staffToken(url?: string): Promise<string> {
  const key = url ?? "default";
  const cached = sessions.get(key);
  if (cached) return cached;
  const shared = await sharedSession(key, (redis, k) => redis.get(k));
  if (shared && (await http("GET", "/operator/me", { token: shared, url })).status === 200) {
    sessions.set(key, shared);
    return shared;
  }
  const res = await http("POST", "/operator/login", {
    body: { email: inject("staffEmail"), password: inject("staffPassword") },
    ip: newIp(),
    url,
  });
  if (res.status !== 200) throw new Error(`staff login failed: ${res.status} ${JSON.stringify(res.body)}`);
  const token = res.body.token as string;
  // Sessions last 12 hours; the key goes with the namespace (or after 11 hours).
  await sharedSession(key, (redis, k) => redis.set(k, token, "EX", 11 * 3600));
  sessions.set(key, token);
  return token;
}

export interface TestTenant {
  id: string;
  apiKey: string;
  apiSecret: string;
  server(): Promise<string>;
  user(userId: string, expiresIn?: string): Promise<string>;
}

export async function newTenant(opts: { name?: string; rate_limit_per_minute?: number; url?: string } = {}): Promise<TestTenant> {
  const res = await http("POST", "/admin/tenants", {
    token: await staffToken(opts.url),
    body: { name: opts.name ?? `tenant-${randomBytes(3).toString("hex")}`, rate_limit_per_minute: opts.rate_limit_per_minute },
    url: opts.url,
  });
  if (res.status !== 201) throw new Error(`create tenant: ${res.status} ${JSON.stringify(res.body)}`);
  const t: TestTenant = {
    id: res.body.tenant.id,
    apiKey: res.body.tenant.api_key,
    apiSecret: res.body.api_secret,
    server: () => createServerToken(t.apiKey, t.apiSecret),
    user: (userId, expiresIn) => createUserToken(t.apiKey, t.apiSecret, userId, expiresIn ? { expiresIn } : {}),
  };
  return t;
}

export const uniqueEmail = (label = "op") => `${label}-${randomBytes(5).toString("hex")}@example.com`;
export const PASSWORD = "correct horse battery staple";

/** Creates an operator on a tenant through the admin route and accepts its invite. */
export async function newOperator(
  tenantId: string,
  role: "owner" | "member",
  opts: { accept?: boolean; email?: string } = {},
): Promise<{ id: string; email: string; token: string; inviteToken: string }> {
  const email = opts.email ?? uniqueEmail(role);
  const created = await http("POST", `/admin/tenants/${tenantId}/operators`, {
    token: await staffToken(),
    body: { email, name: `${role} ${email}`, role },
  });
  if (created.status !== 201) throw new Error(`create operator: ${created.status} ${JSON.stringify(created.body)}`);
  const inviteToken = created.body.invite_token as string;
  if (opts.accept === false) return { id: created.body.teammate.id, email, token: "", inviteToken };
  const accepted = await http("POST", "/operator/invite/accept", { body: { token: inviteToken, password: PASSWORD }, ip: newIp() });
  if (accepted.status !== 200) throw new Error(`accept invite: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return { id: created.body.teammate.id, email, token: accepted.body.token, inviteToken };
}

/**
 * Rate limits count in fixed one-minute windows aligned to the clock: a test that fills a window
 * starts early in one (waiting for the next when fewer than `seconds` are left), so that its
 * attempts do not straddle a window change and start again from zero halfway through.
 */
export async function freshRateWindow(seconds = 20): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < seconds * 1000) await new Promise((r) => setTimeout(r, left + 100));
}

/**
 * Until a work queue holds nothing (every task published so far handled and acked). Queue depth
 * is one answer shared for READY_CACHE_MS (500 ms): the first look waits that long, so that an
 * answer read before the caller's own work was published cannot say "empty".
 */
export async function queueDrained(queue: "fanout" | "notify" | "webhooks", opts: { url?: string; timeoutMs?: number } = {}): Promise<void> {
  await new Promise((r) => setTimeout(r, 600));
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    const res = await http("GET", `/v1/health/queues/${queue}`, opts.url ? { url: opts.url } : {});
    if (res.body.pending === 0) return;
    if (Date.now() > deadline) throw new Error(`the ${queue} queue did not drain: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A tenant, its server token, and an activity by `user:owner` on `user:owner` (the reaction tests' start). */
export async function tenantWithActivity(): Promise<{ t: TestTenant; server: string; activity: any }> {
  const t = await newTenant();
  const server = await t.server();
  const res = await http("POST", "/v1/feeds/user/owner/activities", { token: server, body: { actor: "user:owner", verb: "post", object: "note:1" } });
  if (res.status !== 201) throw new Error(`post the activity: ${res.status} ${JSON.stringify(res.body)}`);
  return { t, server, activity: res.body };
}

/** `POST /v1/activities/{id}/reactions`, on the shared system or the one at `url`. */
export const react = (token: string, activityId: string, body: unknown, url?: string) =>
  http("POST", `/v1/activities/${activityId}/reactions`, { token, body, ...(url ? { url } : {}) });

/** Every key of this run's namespace that matches `pattern` after `<namespace>:` (SCAN, never KEYS). */
export async function namespaceKeys(redis: Redis, pattern = "*"): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", `${inject("namespace")}:${pattern}`, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}
