import type { ServiceBuild } from "@feeds/kit";
import { createGraphModule } from "./module.js";

/** The graph module from a process's infrastructure (its main, or the one-process system). */
export const buildGraph: ServiceBuild = async (infra, peers) =>
  createGraphModule({
    db: (await infra.mongo()).db,
    nats: await infra.nats(),
    redis: await infra.redis(),
    peers,
    log: infra.log,
  });
