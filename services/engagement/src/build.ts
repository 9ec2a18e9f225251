import type { ServiceBuild } from "@feeds/kit";
import { createEngagementModule } from "./module.js";

/** The engagement module from a process's infrastructure (its main, or the one-process system). */
export const buildEngagement: ServiceBuild = async (infra, peers) =>
  createEngagementModule({
    db: (await infra.mongo()).db,
    redis: await infra.redis(),
    nats: await infra.nats(),
    peers,
    log: infra.log,
  });
