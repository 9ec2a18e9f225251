// Bench 5: jose HS256 verification cost per token, alone in a loop (no HTTP, no cache).
// "as gateway": the secret as a Uint8Array, as auth.ts passes it (jose imports it on each call);
// "pre-imported key": a KeyObject made once, for comparison; "decode header only": what a
// verified-cache hit still costs (decodeProtectedHeader) before the Map lookup; "64 concurrent":
// throughput per token when many verifications overlap (jose verifies through WebCrypto, whose
// HMAC runs off the main thread, so one-at-a-time timing is mostly the hop there and back);
// "node:crypto createHmac": the signature check alone, synchronous, for scale.
import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from "node:crypto";
import { performance } from "node:perf_hooks";
import { SignJWT, decodeProtectedHeader, jwtVerify } from "jose";

async function timeLoop(n, fn) {
  for (let i = 0; i < Math.min(2000, n); i++) await fn(); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn();
  return ((performance.now() - t0) * 1000) / n; // µs per call
}

export async function runJwt({ n = 20_000 } = {}) {
  const secret = randomBytes(32).toString("base64url");
  const bytes = new TextEncoder().encode(secret);
  const key = createSecretKey(bytes);
  const token = await new SignJWT({ server: true })
    .setProtectedHeader({ alg: "HS256", kid: "bench" })
    .setIssuedAt()
    .sign(bytes);
  const options = { algorithms: ["HS256"], clockTolerance: 5 };
  const asGateway = await timeLoop(n, () => jwtVerify(token, bytes, options));
  const preImported = await timeLoop(n, () => jwtVerify(token, key, options));
  const decodeOnly = await timeLoop(n * 5, async () => decodeProtectedHeader(token));
  const concurrent64 = await timeLoop(Math.ceil(n / 64), () =>
    Promise.all(Array.from({ length: 64 }, () => jwtVerify(token, bytes, options))),
  ) / 64;
  const [h, p, sig] = token.split(".");
  const want = Buffer.from(sig, "base64url");
  const hmacOnly = await timeLoop(n * 2, async () => {
    const got = createHmac("sha256", bytes).update(`${h}.${p}`).digest();
    if (!timingSafeEqual(got, want)) throw new Error("bad signature");
  });
  return { n, asGatewayUs: asGateway, preImportedKeyUs: preImported, decodeHeaderUs: decodeOnly, concurrent64Us: concurrent64, hmacOnlyUs: hmacOnly };
}
