import { createHmac, timingSafeEqual } from "node:crypto";

// Service-to-service authentication: every call between our processes carries a short-lived
// token, HMAC-SHA256 signed with FEEDS_INTERNAL_KEY, naming the tenant and caller the gateway
// verified. Services take tenant and caller from a verified token only.

/** Who is calling, as the gateway verified it. `anonymous`: no verified end client (public
 * routes, or a process calling without naming a caller); it is never promoted to `system`. */
export type Caller =
  | { kind: "system" }
  | { kind: "server" }
  | { kind: "anonymous" }
  | { kind: "user"; userId: string }
  | { kind: "operator"; operatorId: string };

export interface InternalClaims {
  tenantId: string | undefined;
  caller: Caller;
}

/** Signs and verifies the internal tokens of one key. */
export interface InternalAuth {
  /** A token for these claims, valid for TOKEN_TTL_S (reused while REUSE_S of it remain). */
  sign(claims: InternalClaims): string;
  /** The claims of a valid token, or why it is refused. */
  verify(token: string | null): InternalClaims | { refused: string };
}

export const INTERNAL_AUTH_HEADER = "feeds-auth";
export const TOKEN_TTL_S = 60;
// A cached token is handed out only while at least this much of its lifetime remains.
const REUSE_S = 30;
const CLOCK_TOLERANCE_S = 5;
const MAX_TOKEN_CHARS = 2048;
const MAX_CACHED = 10_000;
const VERSION = "v1";

export function encodeCaller(c: Caller): string {
  switch (c.kind) {
    case "user":
      return `user:${c.userId}`;
    case "operator":
      return `operator:${c.operatorId}`;
    case "server":
    case "system":
    case "anonymous":
      return c.kind;
  }
}

/** Strict: anything but a well-formed caller is no caller at all. */
export function decodeCaller(v: unknown): Caller | null {
  if (v === "system" || v === "server" || v === "anonymous") return { kind: v };
  if (typeof v !== "string") return null;
  if (v.startsWith("user:") && v.length > 5) return { kind: "user", userId: v.slice(5) };
  if (v.startsWith("operator:") && v.length > 9) return { kind: "operator", operatorId: v.slice(9) };
  return null;
}

const mac = (key: Buffer, signed: string) => createHmac("sha256", key).update(signed).digest();

/** One token, signed now (no cache): `v1.<base64url JSON {t, c, e}>.<base64url HMAC>`. */
export function signInternalToken(key: Buffer, claims: InternalClaims, expiresAt: number): string {
  const payload = Buffer.from(JSON.stringify({ t: claims.tenantId, c: encodeCaller(claims.caller), e: expiresAt })).toString("base64url");
  const signed = `${VERSION}.${payload}`;
  return `${signed}.${mac(key, signed).toString("base64url")}`;
}

/** Verifies one token at time `t` (Unix seconds): its claims and expiry, or why it is refused. */
function checkToken(key: Buffer, token: string | null, t: number): { claims: InternalClaims; expiresAt: number } | { refused: string } {
  if (!token) return { refused: "no internal token" };
  if (token.length > MAX_TOKEN_CHARS) return { refused: "malformed internal token" };
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== VERSION) return { refused: "malformed internal token" };
  const given = Buffer.from(parts[2] as string, "base64url");
  const expected = mac(key, `${VERSION}.${parts[1] as string}`);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { refused: "bad internal token signature" };
  let body: { t?: unknown; c?: unknown; e?: unknown };
  try {
    body = JSON.parse(Buffer.from(parts[1] as string, "base64url").toString("utf8")) as typeof body;
  } catch {
    return { refused: "malformed internal token" };
  }
  if (typeof body.e !== "number" || !Number.isInteger(body.e)) return { refused: "malformed internal token" };
  if (body.e + CLOCK_TOLERANCE_S < t) return { refused: "expired internal token" };
  // A signer's clock far ahead, or a token meant to live long: refused alike.
  if (body.e > t + TOKEN_TTL_S + CLOCK_TOLERANCE_S) return { refused: "internal token lives too long" };
  const caller = decodeCaller(body.c);
  if (!caller) return { refused: "internal token names no caller" };
  if (body.t !== undefined && (typeof body.t !== "string" || body.t === "")) return { refused: "malformed internal token" };
  return { claims: { tenantId: body.t, caller }, expiresAt: body.e };
}

export function createInternalAuth(key: Buffer, now: () => number = () => Math.floor(Date.now() / 1000)): InternalAuth {
  const signed = new Map<string, { token: string; reuseUntil: number }>();
  // Tokens that verified, by their whole text (MAC included): signers reuse a token for half a
  // minute, so most calls skip the HMAC. Expiry is still checked on every use.
  const verified = new Map<string, { claims: InternalClaims; expiresAt: number }>();
  return {
    sign(claims) {
      const t = now();
      const cacheKey = JSON.stringify([claims.tenantId ?? null, encodeCaller(claims.caller)]);
      const hit = signed.get(cacheKey);
      if (hit && hit.reuseUntil > t) return hit.token;
      // Unbounded tenants × users: forget everything rather than grow without limit.
      if (signed.size >= MAX_CACHED) signed.clear();
      const token = signInternalToken(key, claims, t + TOKEN_TTL_S);
      signed.set(cacheKey, { token, reuseUntil: t + TOKEN_TTL_S - REUSE_S });
      return token;
    },
    verify(token) {
      const t = now();
      const hit = (token && verified.get(token)) || checkToken(key, token, t);
      if ("refused" in hit) return hit;
      if (hit.expiresAt + CLOCK_TOLERANCE_S < t) {
        verified.delete(token as string);
        return { refused: "expired internal token" };
      }
      if (!verified.has(token as string)) {
        if (verified.size >= MAX_CACHED) verified.clear();
        verified.set(token as string, hit);
      }
      return hit.claims;
    },
  };
}
