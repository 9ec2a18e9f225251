import { decodeProtectedHeader, decodeJwt, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { createServerToken, createUserToken, parseDuration } from "../src/index.js";

const KEY = "key_test_123";
const SECRET = "s3cret-s3cret-s3cret-s3cret-s3cret-0123";
const secretBytes = new TextEncoder().encode(SECRET);
const nowS = () => Math.floor(Date.now() / 1000);

describe("createServerToken", () => {
  it("signs HS256 with kid = apiKey and has no exp by default", async () => {
    const before = nowS();
    const token = await createServerToken(KEY, SECRET);
    const header = decodeProtectedHeader(token);
    expect(header.alg).toBe("HS256");
    expect(header.kid).toBe(KEY);
    const { payload } = await jwtVerify(token, secretBytes, { algorithms: ["HS256"] });
    expect(payload["server"]).toBe(true);
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.iat).toBeLessThanOrEqual(nowS());
    expect("exp" in payload).toBe(false);
    expect("user_id" in payload).toBe(false);
    expect(Object.keys(payload).sort()).toEqual(["iat", "server"]);
  });

  it("sets exp = iat + expiresIn when given", async () => {
    const token = await createServerToken(KEY, SECRET, { expiresIn: "15m" });
    const payload = decodeJwt(token);
    expect(payload.exp).toBe((payload.iat ?? 0) + 900);
    expect(payload["server"]).toBe(true);
  });

  it("does not verify with another secret", async () => {
    const token = await createServerToken(KEY, SECRET);
    await expect(jwtVerify(token, new TextEncoder().encode("other-secret"))).rejects.toThrow();
  });

  it("rejects empty credentials and bad durations", async () => {
    await expect(createServerToken("", SECRET)).rejects.toThrow(TypeError);
    await expect(createServerToken(KEY, "")).rejects.toThrow(TypeError);
    await expect(createServerToken(KEY, SECRET, { expiresIn: "soon" })).rejects.toThrow(/invalid duration/);
  });
});

describe("createUserToken", () => {
  it("carries user_id, iat and exp (default 1h), HS256 and kid", async () => {
    const before = nowS();
    const token = await createUserToken(KEY, SECRET, "alice");
    const header = decodeProtectedHeader(token);
    expect(header).toMatchObject({ alg: "HS256", kid: KEY });
    const { payload } = await jwtVerify(token, secretBytes, { algorithms: ["HS256"] });
    expect(payload["user_id"]).toBe("alice");
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.exp).toBe((payload.iat ?? 0) + 3600);
    expect("server" in payload).toBe(false);
    expect(Object.keys(payload).sort()).toEqual(["exp", "iat", "user_id"]);
  });

  it.each([
    ["30s", 30],
    ["15m", 900],
    ["1h", 3600],
    ["7d", 604_800],
  ])("expiresIn %s → exp = iat + %i", async (expiresIn, seconds) => {
    const payload = decodeJwt(await createUserToken(KEY, SECRET, "bob", { expiresIn }));
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(seconds);
  });

  it("honours issuedAt (seconds or Date)", async () => {
    const a = decodeJwt(await createUserToken(KEY, SECRET, "u", { issuedAt: 1_700_000_000, expiresIn: "1m" }));
    expect(a).toMatchObject({ iat: 1_700_000_000, exp: 1_700_000_060 });
    const b = decodeJwt(await createServerToken(KEY, SECRET, { issuedAt: new Date(1_700_000_000_900) }));
    expect(b.iat).toBe(1_700_000_000);
  });

  it("requires a user id and a valid duration", async () => {
    await expect(createUserToken(KEY, SECRET, "")).rejects.toThrow(/userId/);
    await expect(createUserToken(KEY, SECRET, "u", { expiresIn: "1w" })).rejects.toThrow(/invalid duration/);
  });
});

describe("parseDuration", () => {
  it.each([
    ["30s", 30],
    ["1s", 1],
    ["15m", 900],
    ["1h", 3600],
    ["24h", 86_400],
    ["7d", 604_800],
  ])("%s → %i seconds", (input, seconds) => {
    expect(parseDuration(input)).toBe(seconds);
  });

  it.each(["", "10", "h", "1w", "-1s", "1.5h", " 1h", "1h ", "1H", "0s", "1hour", "1ms"])(
    "throws on %j",
    (input) => {
      expect(() => parseDuration(input)).toThrow(TypeError);
    },
  );

  it("throws on non-strings", () => {
    expect(() => parseDuration(60 as unknown as string)).toThrow(TypeError);
  });
});
