// Cost of service-to-service authentication per call: signing (fresh and cached), verifying,
// and a whole in-process call with and without the interceptors' token work.
// Run after `tsc -b`: node test/bench/internal-auth.mjs [N]
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createInternalAuth, signInternalToken } from "@feeds/kit";

const N = Number(process.argv[2] ?? 200_000);
const key = randomBytes(32);
const auth = createInternalAuth(key);
const claims = (i) => ({ tenantId: "t_3f9a1c2b7d", caller: { kind: "user", userId: `user-${i % 1000}` } });
const exp = Math.floor(Date.now() / 1000) + 60;

function time(label, fn) {
  for (let i = 0; i < 20_000; i++) fn(i); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) fn(i);
  const us = ((performance.now() - t0) * 1000) / N;
  process.stdout.write(`${label.padEnd(38)} ${us.toFixed(2)} µs/call\n`);
}

const tokens = Array.from({ length: 1000 }, (_, i) => signInternalToken(key, claims(i), exp));
let sink = 0;
time("sign, fresh (HMAC every call)", (i) => (sink += signInternalToken(key, claims(i), exp).length));
time("sign, cached (1000 callers)", (i) => (sink += auth.sign(claims(i)).length));
time("verify, first sight (HMAC)", (i) => (sink += "refused" in createInternalAuth(key).verify(tokens[i % 1000]) ? 1 : 0));
time("verify, seen before (cached)", (i) => (sink += "refused" in auth.verify(tokens[i % 1000]) ? 1 : 0));
time("sign + verify, both fresh", (i) => (sink += "refused" in createInternalAuth(key).verify(signInternalToken(key, claims(i), exp)) ? 1 : 0));
time("sign + verify, both cached", (i) => (sink += "refused" in auth.verify(auth.sign(claims(i))) ? 1 : 0));
if (sink < 0) process.stdout.write("");
