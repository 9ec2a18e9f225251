import type { Db } from "mongodb";
import type { Logger, ServiceModule } from "@feeds/kit";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";
import { createObjectRepository } from "./object-repository.js";
import { createCatalogService } from "./routes.js";

/** The catalog service: tenant objects `type:id`. Objects are read by `_id` only: no index beyond it. */
export async function createCatalogModule(deps: { db: Db; log: Logger }): Promise<ServiceModule> {
  const impl = createCatalogService({ objects: createObjectRepository(deps.db) });
  return { name: "catalog", routes: (router) => router.service(CatalogService, impl) };
}
