import type { ServiceBuild } from "@feeds/kit";
import { createFeedModule } from "./module.js";

/** The feed module from a process's infrastructure (its main, or the one-process system). */
export const buildFeed: ServiceBuild = async (infra, peers) =>
  createFeedModule({
    db: (await infra.mongo()).db,
    nats: await infra.nats(),
    redis: await infra.redis(),
    peers,
    log: infra.log,
  });
