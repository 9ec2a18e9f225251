import type { Db } from "mongodb";
import type { Logger, ServiceModule } from "@feeds/kit";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";

/** The catalog service: tenant objects `type:id`. */
export async function createCatalogModule(_deps: { db: Db; log: Logger }): Promise<ServiceModule> {
  return { name: "catalog", routes: (router) => router.service(CatalogService, {}) };
}
