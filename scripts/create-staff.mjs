// Creates a platform staff operator: npm run create-staff -- <email> [name]
// The password is read from FEEDS_STAFF_PASSWORD or generated and printed once.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { root, setup } from "./lib/setup.mjs";

const [email, name] = process.argv.slice(2);
if (!email) {
  process.stderr.write("usage: npm run create-staff -- <email> [name]\n");
  process.exit(2);
}
const infra = await setup();
process.env.MONGO_URL = infra.mongoUrl;
process.env.REDIS_URL = infra.redisUrl;
process.env.NATS_URL = infra.natsUrl;
process.env.FEEDS_MASTER_KEY = infra.masterKey;
const { createStaff } = await import(join(root, "services/identity/dist/cli.js"));
const password = process.env.FEEDS_STAFF_PASSWORD ?? randomBytes(12).toString("base64url");
const res = await createStaff({ email, name: name ?? email, password });
process.stdout.write(
  res.created
    ? `created staff ${email}${process.env.FEEDS_STAFF_PASSWORD ? "" : ` with password ${password}`}\n`
    : `an operator with email ${email} already exists; nothing changed\n`,
);
process.exit(0);
