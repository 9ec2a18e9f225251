// `npm test`: the same set-up as `npm start`, then every check and every test.
import { join } from "node:path";
import { log, root, run, setup } from "./lib/setup.mjs";

const infra = await setup();
run(process.execPath, [join(root, "scripts", "check-proto.mjs")]);
log("type-checking the tests");
const tsc = join(root, "node_modules", ".bin", "tsc");
run(tsc, ["-p", "test", "--noEmit"]);
for (const dir of ["sdk/test", "kit/test", "services/identity/test"]) run(tsc, ["-p", dir, "--noEmit"]);
log("eslint");
run(join(root, "node_modules", ".bin", "eslint"), ["--max-warnings", "0", "."]);
log("vitest");
run(join(root, "node_modules", ".bin", "vitest"), ["run", ...process.argv.slice(2)], {
  env: {
    ...process.env,
    FEEDS_TEST_MONGO_URL: infra.mongoUrl,
    FEEDS_TEST_NATS_URL: infra.natsUrl,
    FEEDS_TEST_REDIS_URL: infra.redisUrl,
    FEEDS_MASTER_KEY: infra.masterKey,
    BUILD_VERSION: infra.version,
  },
});
