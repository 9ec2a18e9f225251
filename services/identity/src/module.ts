import type { Db } from "mongodb";
import type { Logger, RedisConn, ServiceModule } from "@feeds/kit";
import { OperatorService, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import { createUserRepository, withUserCache } from "./user-repository.js";
import { createOperatorRepository } from "./operator-repository.js";
import { createUserService } from "./user-routes.js";
import { createOperatorService } from "./operator-routes.js";
import { createDummyHash } from "./passwords.js";

/** Redis key holding a user's revoked_before (epoch ms), read by every gateway replica. */
export const revocationKey = (redis: RedisConn, tenantId: string, userId: string) =>
  redis.key("rv", tenantId, userId);
/** Revocation keys are a cache of MongoDB: bounded so that a missed update cannot live forever. */
export const REVOCATION_TTL_SECONDS = 600;

export async function createIdentityModule(deps: {
  db: Db;
  redis: RedisConn;
  sessionTtlSeconds: number;
  log: Logger;
}): Promise<ServiceModule> {
  const stored = createUserRepository(deps.db);
  const operators = createOperatorRepository(deps.db);
  await Promise.all([stored.ensureIndexes(), operators.ensureIndexes()]);
  const users = withUserCache(stored, deps.redis);
  const userImpl = createUserService({
    users,
    signalRevocation: async (tenantId, userId, ms) => {
      await deps.redis.redis.set(revocationKey(deps.redis, tenantId, userId), String(ms), "EX", REVOCATION_TTL_SECONDS);
    },
  });
  const operatorImpl = createOperatorService({
    operators,
    dummyHash: await createDummyHash(),
    sessionTtlSeconds: deps.sessionTtlSeconds,
  });
  return {
    name: "identity",
    routes: (router) => {
      router.service(UserService, userImpl);
      router.service(OperatorService, operatorImpl);
    },
  };
}
