import type { TestProject } from "vitest/node";
import { startForProject } from "./global-setup.js";

/**
 * The same system split as the Helm chart deploys it: one process per service, talking gRPC over
 * loopback, and each worker in a process of its own (its service's process serving routes only).
 */
export default function setup(project: TestProject) {
  return startForProject(project, true, true);
}
