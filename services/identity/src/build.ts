import type { ServiceBuild } from "@feeds/kit";
import { createIdentityModule } from "./module.js";

/** The identity module from a process's infrastructure (its main, or the one-process system). */
export const buildIdentity: ServiceBuild = async (infra) =>
  createIdentityModule({
    db: (await infra.mongo()).db,
    redis: await infra.redis(),
    nats: await infra.nats(),
    sessionTtlSeconds: infra.config.SESSION_TTL_SECONDS,
    log: infra.log,
  });
