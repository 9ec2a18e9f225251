// `npm start`: install, build, ensure MongoDB/NATS/Redis, start the whole system and say how to log in.
// Flags: --split (one process per service over gRPC, as in production).
import { log, setup } from "./lib/setup.mjs";
import { startSystem } from "./lib/system.mjs";

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
};
const system = await startSystem({ env, split, port: Number(env.PORT), inherit: true });
const password = system.staff?.password ?? process.env.BOOTSTRAP_STAFF_PASSWORD;
process.stdout.write(`
Feeds is running (${split ? "one process per service" : "one process"}, namespace ${env.FEEDS_NAMESPACE}).

  Base URL:    ${system.url}
  OpenAPI:     ${system.url}/openapi.json
  Staff login: ${email}
  Password:    ${password ?? "(set earlier: BOOTSTRAP_STAFF_PASSWORD, or the one printed on the first start)"}

Log in:
  curl -s -X POST ${system.url}/operator/login -H 'content-type: application/json' \\
    -d '{"email":"${email}","password":"${password ?? "<password>"}"}'

Ctrl-C stops it.
`);
const stop = async () => {
  log("stopping…");
  await system.stop();
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
