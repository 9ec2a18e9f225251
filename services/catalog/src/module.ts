import type { ServiceModule } from "@feeds/kit";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";

/** The catalog service. Its RPCs arrive with their issue; today it serves its health check. */
export async function createCatalogModule(): Promise<ServiceModule> {
  return { name: "catalog", routes: (router) => router.service(CatalogService, {}) };
}
