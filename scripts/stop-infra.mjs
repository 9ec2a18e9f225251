// `npm run stop-infra`: stops the local servers this checkout's set-up started and left running
// (the FerretDB launcher or mongod, nats-server, redis-server: whichever it had to start), each
// by the pid it recorded under .cache/infra/ (Redis's from its pidfile). A server it did not
// start, such as a system NATS or another checkout's launcher, is never stopped.
import { root, log } from "./lib/setup.mjs";
import { startedServers, stopStartedServers } from "./lib/started-servers.mjs";

if (startedServers(root).length === 0) {
  log("no server started by this checkout's set-up is running: nothing to stop");
} else {
  const stopped = await stopStartedServers(root, { log });
  log(`stopped ${stopped.map((r) => `${r.what} (pid ${r.pid}, port ${r.port})`).join(", ")}`);
}
