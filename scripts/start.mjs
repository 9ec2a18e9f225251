// `npm start`: install, build, ensure MongoDB/NATS/Redis, start the whole system and say how to log in.
// Flags: --split (one process per service over gRPC, as in production).
// PORT (8080) and METRICS_PORT (9464): the gateway's API and Prometheus ports; in --split mode the
// other processes take free ports for their metrics, and every metrics URL is printed.
import { log, root, setup } from "./lib/setup.mjs";
import { startSystem } from "./lib/system.mjs";
import { describeServers, serverStatus } from "./lib/started-servers.mjs";
import { portOpen } from "./infra.mjs";

const split = process.argv.includes("--split");
const infra = await setup();
const email = process.env.BOOTSTRAP_STAFF_EMAIL ?? "admin@feeds.local";
const env = {
  MONGO_URL: infra.mongoUrl,
  NATS_URL: infra.natsUrl,
  REDIS_URL: infra.redisUrl,
  FEEDS_MASTER_KEY: infra.masterKey,
  FEEDS_WEBHOOK_KEY: infra.webhookKey,
  FEEDS_INTERNAL_KEY: infra.internalKey,
  BUILD_VERSION: infra.version,
  BOOTSTRAP_STAFF_EMAIL: email,
  FEEDS_NAMESPACE: process.env.FEEDS_NAMESPACE ?? "feeds",
  PORT: process.env.PORT ?? "8080",
  METRICS_PORT: process.env.METRICS_PORT ?? "9464",
};
// A taken port would stop the gateway with EADDRINUSE in its log: say which and what to set.
for (const [name, port] of [["PORT", env.PORT], ["METRICS_PORT", env.METRICS_PORT]]) {
  if (Number(port) !== 0 && (await portOpen(Number(port)))) {
    log(`port ${port} (${name}) is already in use on 127.0.0.1: stop what listens there, or set ${name} to another port (0: a free one)`);
    process.exit(1);
  }
}
const system = await startSystem({ env, split, port: Number(env.PORT), inherit: true });
const password = system.staff?.password ?? process.env.BOOTSTRAP_STAFF_PASSWORD;
const servers = describeServers(infra.servers ?? []);
/** The servers this checkout started that still run (asked again at Ctrl-C). */
const leftRunning = (statuses) => {
  const ours = statuses.filter((s) => s.started !== "no");
  return ours.length
    ? `Left running for the next start: ${ours.map((s) => `${s.what} (pid ${s.pid}, port ${s.port})`).join(", ")}; \`npm run stop-infra\` stops ${ours.length > 1 ? "them" : "it"}.`
    : "No local server was started by this checkout: nothing of ours is left running.";
};
const width = Math.max(...Object.keys(system.metrics).map((n) => n.length));
process.stdout.write(`
Feeds is running (${split ? "one process per service" : "one process"}, namespace ${env.FEEDS_NAMESPACE}).

  Base URL:    ${system.url}
  OpenAPI:     ${system.url}/openapi.json
  Console:     ${system.url}/console/ (log in with the staff login below)
  Staff login: ${email}
  Password:    ${password ?? "(set earlier: BOOTSTRAP_STAFF_PASSWORD, or the one printed on the first start)"}

Prometheus metrics (METRICS_PORT ${env.METRICS_PORT} is the gateway's${split ? "; the other processes took free ports" : ""}):
${Object.entries(system.metrics)
  .map(([name, url]) => `  ${name.padEnd(width)}  ${url}`)
  .join("\n")}

Servers:
${servers.length ? servers.map((l) => `  ${l}`).join("\n") : "  (MONGO_URL, NATS_URL and REDIS_URL given: none on loopback checked)"}

Log in:
  curl -s -X POST ${system.url}/operator/login -H 'content-type: application/json' \\
    -d '{"email":"${email}","password":"${password ?? "<password>"}"}'

Ctrl-C stops the system. ${leftRunning(infra.servers ?? [])}
`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  log("stopping…");
  await system.stop();
  log(`stopped. ${leftRunning(serverStatus(root, infra.servers ?? [], 0))}`);
  process.exit(0);
};
process.once("SIGINT", () => void stop());
process.once("SIGTERM", () => void stop());
for (const p of system.processes) {
  p.child.once("exit", (code) => {
    log(`${p.name} exited (${code}); stopping`);
    void stop();
  });
}
