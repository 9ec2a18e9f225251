import { requireMasterKey, type ServiceBuild } from "@feeds/kit";
import { createTenancyModule } from "./module.js";

/** The tenancy module from a process's infrastructure (its main, or the one-process system). */
export const buildTenancy: ServiceBuild = async (infra) =>
  createTenancyModule({
    db: (await infra.mongo()).db,
    redis: await infra.redis(),
    masterKey: requireMasterKey(infra.config),
    log: infra.log,
  });
