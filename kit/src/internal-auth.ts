import { createHmac, timingSafeEqual } from "node:crypto";
import { isSigner, type ServiceName, type Signer } from "./config.js";
import type { InternalKeys } from "./service-keys.js";

// Service-to-service authentication: every call between our processes carries a short-lived
// token naming the process that signed it, the one RPC it is for, and the tenant and caller the
// gateway verified, HMAC-SHA256 signed with the key of that process's calls to that service
// (kit/src/service-keys.ts). Services take tenant and caller from a verified token only.

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

/** A verified call: its claims and the process that signed it. */
export interface VerifiedCall extends InternalClaims {
  signer: Signer;
}

/** The RPC a token is for: `package.Service/Method` and the service that serves it. */
export interface TokenMethod {
  method: string;
  audience: ServiceName;
}

/** Signs and verifies the internal tokens of one process's keys. */
export interface InternalAuth {
  /** A token of `signer` for `to`, valid for TOKEN_TTL_S (reused while REUSE_S of it remain). */
  sign(signer: Signer, to: TokenMethod, claims: InternalClaims): string;
  /** The claims and signer of a valid token for `to`, or why it is refused. */
  verify(token: string | null, to: TokenMethod): VerifiedCall | { refused: string };
}

export const INTERNAL_AUTH_HEADER = "feeds-auth";
export const TOKEN_TTL_S = 60;
// A cached token is handed out only while at least this much of its lifetime remains.
const REUSE_S = 30;
const CLOCK_TOLERANCE_S = 5;
const MAX_TOKEN_CHARS = 2048;
const MAX_CACHED = 10_000;
const VERSION = "v2";

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

/** One token, signed now (no cache): `v2.<signer>.<base64url JSON {t, c, m, e}>.<base64url HMAC>`. */
export function signInternalToken(key: Buffer, signer: Signer, method: string, claims: InternalClaims, expiresAt: number): string {
  const payload = Buffer.from(JSON.stringify({ t: claims.tenantId, c: encodeCaller(claims.caller), m: method, e: expiresAt })).toString("base64url");
  const signed = `${VERSION}.${signer}.${payload}`;
  return `${signed}.${mac(key, signed).toString("base64url")}`;
}

type Checked = { call: VerifiedCall; method: string; expiresAt: number };

/** Verifies one token's signature and claims at time `t` (Unix seconds); its method is compared by the caller. */
function checkToken(keys: InternalKeys, token: string | null, audience: ServiceName, t: number): Checked | { refused: string } {
  if (!token) return { refused: "no internal token" };
  if (token.length > MAX_TOKEN_CHARS) return { refused: "malformed internal token" };
  const parts = token.split(".");
  if (parts.length !== 4 || parts[0] !== VERSION) return { refused: "malformed internal token" };
  const [, signer, payload, given] = parts as [string, string, string, string];
  if (!isSigner(signer)) return { refused: "internal token names no known process" };
  const key = keys.verifying(signer, audience);
  if (!key) return { refused: `no key for calls of ${signer} to ${audience}` };
  const expected = mac(key, `${VERSION}.${signer}.${payload}`);
  const mac64 = Buffer.from(given, "base64url");
  if (mac64.length !== expected.length || !timingSafeEqual(mac64, expected)) return { refused: "bad internal token signature" };
  let body: { t?: unknown; c?: unknown; m?: unknown; e?: unknown };
  try {
    body = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as typeof body;
  } catch {
    return { refused: "malformed internal token" };
  }
  if (typeof body.e !== "number" || !Number.isInteger(body.e) || typeof body.m !== "string") return { refused: "malformed internal token" };
  if (body.e + CLOCK_TOLERANCE_S < t) return { refused: "expired internal token" };
  // A signer's clock far ahead, or a token meant to live long: refused alike.
  if (body.e > t + TOKEN_TTL_S + CLOCK_TOLERANCE_S) return { refused: "internal token lives too long" };
  const caller = decodeCaller(body.c);
  if (!caller) return { refused: "internal token names no caller" };
  if (body.t !== undefined && (typeof body.t !== "string" || body.t === "")) return { refused: "malformed internal token" };
  return { call: { tenantId: body.t, caller, signer }, method: body.m, expiresAt: body.e };
}

export function createInternalAuth(keys: InternalKeys, now: () => number = () => Math.floor(Date.now() / 1000)): InternalAuth {
  const signed = new Map<string, { token: string; reuseUntil: number }>();
  // Tokens that verified, by their whole text (MAC included): signers reuse a token for half a
  // minute, so most calls skip the HMAC. Method and expiry are still checked on every use.
  const verified = new Map<string, Checked>();
  return {
    sign(signer, to, claims) {
      const t = now();
      const cacheKey = `${signer} ${to.method} ${claims.tenantId ?? ""} ${encodeCaller(claims.caller)}`;
      const hit = signed.get(cacheKey);
      if (hit && hit.reuseUntil > t) return hit.token;
      const key = keys.signing(signer, to.audience);
      if (!key) throw new Error(`this process holds no key to sign as ${signer}`);
      // Unbounded tenants × users × methods: forget everything rather than grow without limit.
      if (signed.size >= MAX_CACHED) signed.clear();
      const token = signInternalToken(key, signer, to.method, claims, t + TOKEN_TTL_S);
      signed.set(cacheKey, { token, reuseUntil: t + TOKEN_TTL_S - REUSE_S });
      return token;
    },
    verify(token, to) {
      const t = now();
      const hit = (token && verified.get(token)) || checkToken(keys, token, to.audience, t);
      if ("refused" in hit) return hit;
      if (hit.method !== to.method) return { refused: `internal token is for ${hit.method.slice(0, 100)}` };
      if (hit.expiresAt + CLOCK_TOLERANCE_S < t) {
        verified.delete(token as string);
        return { refused: "expired internal token" };
      }
      if (!verified.has(token as string)) {
        if (verified.size >= MAX_CACHED) verified.clear();
        verified.set(token as string, hit);
      }
      return hit.call;
    },
  };
}
