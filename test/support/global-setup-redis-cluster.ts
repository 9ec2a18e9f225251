import type { TestProject } from "vitest/node";
import { startRedisCluster } from "../../scripts/infra.mjs";
import { startForProject } from "./global-setup.js";

/**
 * The one-process system on a Redis Cluster of its own (three masters on loopback): every script
 * and multi-key command must keep to one hash tag, or it fails with a slot error. Its namespace
 * is dropped from every master before the cluster stops.
 */
export default async function setup(project: TestProject) {
  const cluster = await startRedisCluster({ masters: 3 });
  try {
    const stop = await startForProject(project, false, false, { redisUrl: cluster.url, prefix: "rcluster" });
    return async () => {
      try {
        await stop();
      } finally {
        await cluster.stop();
      }
    };
  } catch (e) {
    await cluster.stop();
    throw e;
  }
}
