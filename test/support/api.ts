import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { createServerToken, createUserToken } from "@feeds/sdk";

export const baseUrl = () => inject("baseUrl");

export interface RawAnswer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A fresh client address per caller (the test system trusts X-Forwarded-For). */
export const newIp = () => `10.${rand255()}.${rand255()}.${rand255()}`;
const rand255 = () => randomBytes(1)[0] ?? 1;

/** One HTTP call, never throwing on a status: tests assert on exact codes, headers and bodies. */
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
  const res = await fetch(`${opts.url ?? baseUrl()}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
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

/** A session of the bootstrap staff operator. */
export async function staffToken(url?: string): Promise<string> {
  const key = url ?? "default";
  const cached = sessions.get(key);
  if (cached) return cached;
  const res = await http("POST", "/operator/login", {
    body: { email: inject("staffEmail"), password: inject("staffPassword") },
    ip: newIp(),
    url,
  });
  if (res.status !== 200) throw new Error(`staff login failed: ${res.status} ${JSON.stringify(res.body)}`);
  sessions.set(key, res.body.token);
  return res.body.token as string;
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
