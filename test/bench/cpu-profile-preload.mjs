// Preloaded into the gateway by `npm run bench -- --cpu-prof` (NODE_OPTIONS=--import=<this>;
// Node 20 refuses --cpu-prof in NODE_OPTIONS). SIGUSR2 starts the V8 CPU profiler; the next
// SIGUSR2 stops it and writes $BENCH_CPU_PROF_DIR/gateway-<pid>.cpuprofile.
import { Session } from "node:inspector";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.env.BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  let running = false;
  process.on("SIGUSR2", () => {
    if (!running) {
      running = true;
      session.post("Profiler.enable", () => {
        session.post("Profiler.setSamplingInterval", { interval: 200 }, () => session.post("Profiler.start"));
      });
      return;
    }
    running = false;
    session.post("Profiler.stop", (err, res) => {
      if (err) return;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `gateway-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}
