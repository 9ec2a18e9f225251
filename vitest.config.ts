import { defineConfig } from "vitest/config";

// The systems the e2e tests start (global set-up and each test's own, through startSystem, which
// passes its environment on) do not shed load: the tests fire bursts of hundreds of requests on a
// shared two-core machine, where the latency and in-flight limits would answer some of them 429.
// Shedding has its own tests (gateway/test/overload.test.ts) and bench 13 runs it as configured.
const noShedding = { OVERLOAD_MAX_LATENCY_MS: "0", OVERLOAD_MAX_IN_FLIGHT: "0", OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0" };
Object.assign(process.env, { ...noShedding, ...process.env });

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["{kit,sdk,gateway,system}/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/deploy/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          // Files share one running system; fault tests start their own.
          fileParallelism: false,
        },
      },
      {
        test: {
          // The smoke subset, against the system split into one process per service.
          name: "e2e-split",
          // Plus what only the split shows: workers in processes of their own.
          include: ["test/e2e/{conventions,auth,users,feeds,graph,metrics-processes}.test.ts", "test/split/**/*.test.ts"],
          globalSetup: ["test/support/global-setup-split.ts"],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
