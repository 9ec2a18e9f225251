import type { TestProject } from "vitest/node";
import { startForProject } from "./global-setup.js";

/** The same system split into one process per service, talking gRPC over loopback. */
export default function setup(project: TestProject) {
  return startForProject(project, true);
}
