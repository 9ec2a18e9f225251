import type { ServiceBuild } from "@feeds/kit";
import { createCatalogModule } from "./module.js";

/** The catalog module from a process's infrastructure (its main, or the one-process system). */
export const buildCatalog: ServiceBuild = async (infra) =>
  createCatalogModule({ db: (await infra.mongo()).db, redis: await infra.redis(), log: infra.log });
