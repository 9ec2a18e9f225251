// Cost of service-to-service authentication per call: signing (fresh and cached), verifying
// (first sight and remembered), and a whole in-process call through the interceptors (token,
// method binding and allow-list included) to a handler that does nothing.
// Run after `tsc -b`: node test/bench/internal-auth.mjs [N]
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createClient } from "@connectrpc/connect";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { callKeyOf, createInProcessTransport, createInternalAuth, createLogger, rootKeys, scope, signingKeyOf, signInternalToken } from "@feeds/kit";

const N = Number(process.argv[2] ?? 200_000);
const root = randomBytes(32);
const auth = createInternalAuth(rootKeys(root));
const to = { method: "feeds.tenancy.v1.TenancyService/GetTenant", audience: "tenancy" };
const key = callKeyOf(signingKeyOf(root, "gateway"), "tenancy");
const claims = (i) => ({ tenantId: "t_3f9a1c2b7d", caller: { kind: "user", userId: `user-${i % 1000}` } });
const exp = Math.floor(Date.now() / 1000) + 60;

// Wall time and this process's CPU time per call: on a shared machine the second moves less.
const start = () => ({ wall: performance.now(), cpu: process.cpuUsage() });
function report(label, t0) {
  const wall = ((performance.now() - t0.wall) * 1000) / N;
  const { user, system } = process.cpuUsage(t0.cpu);
  process.stdout.write(`${label.padEnd(44)} ${wall.toFixed(2)} µs/call (CPU ${((user + system) / N).toFixed(2)} µs)\n`);
}

function time(label, fn) {
  for (let i = 0; i < 20_000; i++) fn(i); // warm-up
  const t0 = start();
  for (let i = 0; i < N; i++) fn(i);
  report(label, t0);
}

async function timeCalls(label, fn) {
  for (let i = 0; i < 20_000; i++) await fn(i);
  const t0 = start();
  for (let i = 0; i < N; i++) await fn(i);
  report(label, t0);
}

const tokens = Array.from({ length: 1000 }, (_, i) => signInternalToken(key, "gateway", to.method, claims(i), exp));
// An empty token cache each call; the keys themselves are derived once per process.
const keys = rootKeys(root);
const fresh = () => createInternalAuth(keys);
let sink = 0;
time("sign, fresh (HMAC every call)", (i) => (sink += signInternalToken(key, "gateway", to.method, claims(i), exp).length));
time("sign, cached (1000 callers)", (i) => (sink += auth.sign("gateway", to, claims(i)).length));
time("verify, first sight (HMAC)", (i) => (sink += "refused" in fresh().verify(tokens[i % 1000], to) ? 1 : 0));
time("verify, seen before (cached)", (i) => (sink += "refused" in auth.verify(tokens[i % 1000], to) ? 1 : 0));
time("sign + verify, both cached", (i) => (sink += "refused" in auth.verify(auth.sign("gateway", to, claims(i)), to) ? 1 : 0));

// The one-process system's path: direct transport, client and server interceptors, 1000 callers.
const log = createLogger({ LOG_LEVEL: "silent" }, "bench");
const tenancy = { name: "tenancy", routes: (r) => r.service(TenancyService, { getTenant: () => ({}) }) };
const client = createClient(TenancyService, createInProcessTransport([tenancy], log, auth, "gateway"));
const options = Array.from({ length: 1000 }, (_, i) => scope(claims(i)));
await timeCalls("whole in-process call (direct, 1000 callers)", (i) => client.getTenant({ id: "x" }, options[i % 1000]));
if (sink < 0) process.stdout.write("");
