import type { Db } from "mongodb";
import type { Logger, RedisConn, ServiceModule } from "@feeds/kit";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";
import { createObjectRepository, withObjectCache } from "./object-repository.js";
import { createCatalogService } from "./routes.js";

/**
 * The catalog service: tenant objects `type:id`. Objects are read by `_id` only: no index beyond
 * it. Reads of many (the feed's objects sidecar) go through a Redis read cache.
 */
export async function createCatalogModule(deps: { db: Db; redis: RedisConn; log: Logger }): Promise<ServiceModule> {
  const impl = createCatalogService({ objects: withObjectCache(createObjectRepository(deps.db), deps.redis) });
  return { name: "catalog", routes: (router) => router.service(CatalogService, impl) };
}
