import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["{kit,sdk/*,gateway,system}/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/storage/**/*.test.ts"],
        },
      },
      {
        test: {
          // The Helm chart and docker-compose.yml, after every other project: helm and the manifest
          // checker it needs build in the background meanwhile (scripts/test.mjs).
          name: "deploy",
          include: ["test/deploy/**/*.test.ts"],
          sequence: { groupOrder: 1 },
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
          include: ["test/e2e/{conventions,auth,users,feeds,graph,metrics-processes,stream}.test.ts", "test/split/**/*.test.ts"],
          globalSetup: ["test/support/global-setup-split.ts"],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // The smoke subset and the Redis-heavy files, against the system on a 3-master Redis
          // Cluster of its own: a script or multi-key command whose keys span slots fails here.
          name: "e2e-redis-cluster",
          include: ["test/e2e/{conventions,auth,users,feeds,graph,reactions,notifications,rate-limits,idempotency}.test.ts", "test/redis-cluster/**/*.test.ts"],
          globalSetup: ["test/support/global-setup-redis-cluster.ts"],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          // After the other projects, not beside them: a third system at once on two cores
          // slowed the load tests of the e2e project into overload answers (429).
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
