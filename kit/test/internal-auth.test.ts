import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  callKeyOf,
  createInternalAuth,
  processKeys,
  rootKeys,
  signingKeyOf,
  signInternalToken,
  TOKEN_TTL_S,
  type Caller,
  type InternalClaims,
  type TokenMethod,
} from "../src/index.js";

// The tokens alone (kit/src/internal-auth.ts, kit/src/service-keys.ts); the interceptors that
// apply them and the allow-list are in internal-auth-interceptor.test.ts.

const user: Caller = { kind: "user", userId: "u.1" };
const claims: InternalClaims = { tenantId: "t1", caller: user };
const nowS = () => Math.floor(Date.now() / 1000);
const getCredential: TokenMethod = { method: "feeds.tenancy.v1.TenancyService/GetCredential", audience: "tenancy" };
const getTenant: TokenMethod = { method: "feeds.tenancy.v1.TenancyService/GetTenant", audience: "tenancy" };
const getUsers: TokenMethod = { method: "feeds.identity.v1.UserService/GetUsers", audience: "identity" };
/** The key `signer` signs its calls to `audience` with, from the root. */
const callKey = (root: Buffer, signer: Parameters<typeof signingKeyOf>[1], audience: TokenMethod["audience"]) => callKeyOf(signingKeyOf(root, signer), audience);

describe("internal tokens", () => {
  const root = randomBytes(32);
  const auth = createInternalAuth(rootKeys(root));

  it("verify what they signed: tenant, caller and signing process, for every caller kind", () => {
    const callers: Caller[] = [{ kind: "system" }, { kind: "server" }, { kind: "anonymous" }, user, { kind: "operator", operatorId: "o1" }];
    for (const caller of callers) expect(auth.verify(auth.sign("gateway", getCredential, { tenantId: "t1", caller }), getCredential)).toEqual({ tenantId: "t1", caller, signer: "gateway" });
    expect(auth.verify(auth.sign("feed-worker", getUsers, { tenantId: undefined, caller: { kind: "system" } }), getUsers)).toEqual({
      tenantId: undefined,
      caller: { kind: "system" },
      signer: "feed-worker",
    });
  });

  it("are bound to their method: one for GetTenant is refused on GetCredential, first seen or remembered", () => {
    const forTenant = auth.sign("gateway", getTenant, claims);
    expect(createInternalAuth(rootKeys(root)).verify(forTenant, getCredential)).toEqual({ refused: "internal token is for feeds.tenancy.v1.TenancyService/GetTenant" });
    expect(auth.verify(forTenant, getTenant)).toEqual({ ...claims, signer: "gateway" });
    expect(auth.verify(forTenant, getCredential)).toEqual({ refused: "internal token is for feeds.tenancy.v1.TenancyService/GetTenant" });
    // Rewriting the method inside breaks the signature.
    const [v, signer, payload, mac] = forTenant.split(".") as [string, string, string, string];
    const body = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const rewritten = Buffer.from(JSON.stringify({ ...body, m: getCredential.method })).toString("base64url");
    expect(auth.verify(`${v}.${signer}.${rewritten}.${mac}`, getCredential)).toEqual({ refused: "bad internal token signature" });
  });

  it("are bound to their signer: renaming the signer breaks the signature", () => {
    const worker = auth.sign("notification-worker", getCredential, claims);
    expect(auth.verify(worker, getCredential)).toEqual({ ...claims, signer: "notification-worker" });
    expect(auth.verify(worker.replace(".notification-worker.", ".gateway."), getCredential)).toEqual({ refused: "bad internal token signature" });
    expect(auth.verify(worker.replace(".notification-worker.", ".root."), getCredential)).toEqual({ refused: "internal token names no known process" });
  });

  it("a process given its own key signs as itself only: it cannot sign as the gateway, nor forge a token that verifies as one", () => {
    const workerKey = signingKeyOf(root, "notification-worker");
    const worker = createInternalAuth(processKeys({ signer: "notification-worker", key: workerKey }));
    expect(() => worker.sign("gateway", getCredential, claims)).toThrow("this process holds no key to sign as gateway");
    // What it can sign, it signs as itself; and its key, used under another name, does not verify.
    expect(auth.verify(worker.sign("notification-worker", getCredential, claims), getCredential)).toEqual({ ...claims, signer: "notification-worker" });
    const forged = signInternalToken(callKeyOf(workerKey, "tenancy"), "gateway", getCredential.method, claims, nowS() + 30);
    expect(auth.verify(forged, getCredential)).toEqual({ refused: "bad internal token signature" });
    // Nor does the gateway's key for one service sign for another.
    const misdirected = signInternalToken(callKey(root, "gateway", "identity"), "gateway", getCredential.method, claims, nowS() + 30);
    expect(auth.verify(misdirected, getCredential)).toEqual({ refused: "bad internal token signature" });
  });

  it("a service given its callers' keys verifies them, knows no other process, and signs as nobody", () => {
    const tenancy = createInternalAuth(processKeys({ signer: "tenancy", serves: "tenancy", callers: new Map([["gateway", callKey(root, "gateway", "tenancy")]]) }));
    expect(tenancy.verify(auth.sign("gateway", getCredential, claims), getCredential)).toEqual({ ...claims, signer: "gateway" });
    expect(tenancy.verify(auth.sign("notification-worker", getCredential, claims), getCredential)).toEqual({ refused: "no key for calls of notification-worker to tenancy" });
    expect(tenancy.verify(auth.sign("gateway", getUsers, claims), getUsers)).toEqual({ refused: "no key for calls of gateway to identity" });
    expect(() => tenancy.sign("gateway", getCredential, claims)).toThrow("no key to sign as gateway");
  });

  it("refuse a missing, forged, tampered, expired, too long-lived or malformed token", () => {
    const key = callKey(root, "gateway", "tenancy");
    const m = getCredential.method;
    const valid = auth.sign("gateway", getCredential, claims);
    const [v, signer, , mac] = valid.split(".");
    const payloadOf = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const cases: [string | null, string][] = [
      [null, "no internal token"],
      [signInternalToken(randomBytes(32), "gateway", m, claims, nowS() + 30), "bad internal token signature"],
      [`${v}.${signer}.${payloadOf({ t: "t2", c: "system", m, e: nowS() + 30 })}.${mac}`, "bad internal token signature"],
      [signInternalToken(key, "gateway", m, claims, nowS() - 6), "expired internal token"],
      [signInternalToken(key, "gateway", m, claims, nowS() + TOKEN_TTL_S + 60), "internal token lives too long"],
      ["v2.gateway.abc", "malformed internal token"],
      [`v1.${valid.slice(3)}`, "malformed internal token"],
      ["x".repeat(5000), "malformed internal token"],
    ];
    for (const [token, refused] of cases) expect(auth.verify(token, getCredential)).toEqual({ refused });
    // Signed with the key, but naming no caller, one of no known kind, or no method.
    const signedPayload = (o: object) => {
      const signed = `v2.gateway.${payloadOf(o)}`;
      return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
    };
    expect(auth.verify(signedPayload({ t: "t1", m, e: nowS() + 30 }), getCredential)).toEqual({ refused: "internal token names no caller" });
    expect(auth.verify(signedPayload({ t: "t1", c: "root", m, e: nowS() + 30 }), getCredential)).toEqual({ refused: "internal token names no caller" });
    expect(auth.verify(signedPayload({ t: "t1", c: "user:", m, e: nowS() + 30 }), getCredential)).toEqual({ refused: "internal token names no caller" });
    expect(auth.verify(signedPayload({ t: 7, c: "system", m, e: nowS() + 30 }), getCredential)).toEqual({ refused: "malformed internal token" });
    expect(auth.verify(signedPayload({ t: "t1", c: "system", e: nowS() + 30 }), getCredential)).toEqual({ refused: "malformed internal token" });
  });

  it("accept a token up to 5 seconds past its expiry (clock skew)", () => {
    expect(auth.verify(signInternalToken(callKey(root, "gateway", "tenancy"), "gateway", getCredential.method, claims, nowS() - 4), getCredential)).toEqual({ ...claims, signer: "gateway" });
  });

  it("still expire once verified and remembered", () => {
    let t = 1_000_000;
    const clocked = createInternalAuth(rootKeys(root), () => t);
    const token = clocked.sign("gateway", getCredential, claims);
    expect(clocked.verify(token, getCredential)).toEqual({ ...claims, signer: "gateway" });
    t += TOKEN_TTL_S + 5;
    expect(clocked.verify(token, getCredential)).toEqual({ ...claims, signer: "gateway" });
    t += 1;
    expect(clocked.verify(token, getCredential)).toEqual({ refused: "expired internal token" });
  });

  it("are reused while half their lifetime remains, per signer and method, then signed anew", () => {
    let t = 1_000_000;
    const clocked = createInternalAuth(rootKeys(root), () => t);
    const first = clocked.sign("gateway", getCredential, claims);
    t += 29;
    expect(clocked.sign("gateway", getCredential, claims)).toBe(first);
    expect(clocked.sign("gateway", getCredential, { tenantId: "t1", caller: { kind: "server" } })).not.toBe(first);
    expect(clocked.sign("gateway", getTenant, claims)).not.toBe(first);
    expect(clocked.sign("feed", getCredential, claims)).not.toBe(first);
    t += 1;
    const second = clocked.sign("gateway", getCredential, claims);
    expect(second).not.toBe(first);
    expect(clocked.verify(second, getCredential)).toEqual({ ...claims, signer: "gateway" });
  });
});

describe("a token of the old format (v1: no signer, no method)", () => {
  it("is refused", () => {
    const root = randomBytes(32);
    const payload = Buffer.from(JSON.stringify({ t: "t1", c: "system", e: nowS() + 30 })).toString("base64url");
    const v1 = `v1.${payload}.${createHmac("sha256", root).update(`v1.${payload}`).digest("base64url")}`;
    expect(createInternalAuth(rootKeys(root)).verify(v1, getCredential)).toEqual({ refused: "malformed internal token" });
  });
});
