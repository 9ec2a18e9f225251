import type { Db } from "mongodb";
import { allowedOriginsVersionKey, tenantVersionKey, type Logger, type RedisConn, type ServiceModule } from "@feeds/kit";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { createTenantRepository } from "./tenant-repository.js";
import { createTenancyService } from "./routes.js";
import { createCredentialChanges } from "./credential-change.js";
import { randomUUID } from "node:crypto";

export async function createTenancyModule(deps: {
  db: Db;
  redis: RedisConn;
  masterKey: Buffer;
  log: Logger;
}): Promise<ServiceModule> {
  const tenants = createTenantRepository(deps.db);
  await tenants.ensureIndexes();
  const changes = createCredentialChanges({
    tenants,
    log: deps.log,
    signalChange: async (tenantId, change) => {
      await deps.redis.redis.set(tenantVersionKey(deps.redis, tenantId), randomUUID());
      if ("allowed_origins" in change) await deps.redis.redis.set(allowedOriginsVersionKey(deps.redis), randomUUID());
    },
  });
  const impl = createTenancyService({ tenants, masterKey: deps.masterKey, changes });
  return { name: "tenancy", routes: (router) => router.service(TenancyService, impl) };
}
