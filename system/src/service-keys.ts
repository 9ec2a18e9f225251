import { loadConfig, serviceKeySet } from "@feeds/kit";

// `npm run -s service-keys` (in the image: `node system/dist/service-keys.js`): every process's
// key from the root FEEDS_INTERNAL_KEY, as KEY=value lines for docker compose's `.env` or
// `kubectl create secret generic --from-env-file` (docs/service-auth.md). Keep the root out of both.
const config = loadConfig();
if (!config.FEEDS_INTERNAL_KEY) {
  process.stderr.write("usage: FEEDS_INTERNAL_KEY=$(openssl rand -base64 32) npm run -s service-keys > service-keys.env\n");
  process.exit(2);
}
for (const [name, value] of Object.entries(serviceKeySet(Buffer.from(config.FEEDS_INTERNAL_KEY, "base64")))) {
  process.stdout.write(`${name}=${value}\n`);
}
