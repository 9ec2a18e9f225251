import type { Db } from "mongodb";
import {
  createCountSignal,
  createEventOutbox,
  REVOCATION_TTL_SECONDS,
  revocationKey,
  type Logger,
  type Nats,
  type RedisConn,
  type ServiceModule,
} from "@feeds/kit";
import { OperatorService, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import { createUserRepository, withUserCache } from "./user-repository.js";
import { createOperatorRepository } from "./operator-repository.js";
import { withOperatorCache } from "./operator-cache.js";
import { createUserService } from "./user-routes.js";
import { createOperatorService } from "./operator-routes.js";
import { createDummyHash } from "./passwords.js";
import { createSweeper, type SweepOptions } from "./sweeper.js";

// Racing revocations may signal out of order: the stamp only moves forward.
const SIGNAL_SCRIPT = `
if tonumber(ARGV[1]) >= tonumber(redis.call('GET', KEYS[1]) or '0') then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
return 1
`;

export async function createIdentityModule(deps: {
  db: Db;
  redis: RedisConn;
  nats: Nats;
  sessionTtlSeconds: number;
  log: Logger;
  /** Housekeeping of expired sessions and invites (defaults: every minute, 500 rows a batch). */
  sweep?: SweepOptions;
}): Promise<ServiceModule> {
  const stored = createUserRepository(deps.db);
  const storedOperators = createOperatorRepository(deps.db);
  await Promise.all([stored.ensureIndexes(), storedOperators.ensureIndexes()]);
  const operators = withOperatorCache(storedOperators, deps.redis);
  const users = withUserCache(stored, deps.redis);
  // user.updated: a dead writer's event is published once the record shows its write.
  const outbox = createEventOutbox({
    db: deps.db,
    nats: deps.nats,
    log: deps.log,
    collection: "identity_outbox",
    async confirm(event) {
      const doc = await stored.get(event.tenant_id, String(event.data.id));
      return doc !== null && doc.updated_at.getTime() >= Date.parse(String(event.data.updated_at));
    },
  });
  await outbox.ensureIndexes();
  const userImpl = createUserService({
    users,
    outbox,
    signal: createCountSignal(deps.redis, "users"),
    signalRevocation: async (tenantId, userId, ms) => {
      await deps.redis.redis.eval(SIGNAL_SCRIPT, 1, revocationKey(deps.redis, tenantId, userId), String(ms), String(REVOCATION_TTL_SECONDS));
    },
  });
  const operatorImpl = createOperatorService({
    operators,
    dummyHash: await createDummyHash(),
    sessionTtlSeconds: deps.sessionTtlSeconds,
  });
  const sweeper = createSweeper({ operators, log: deps.log, options: deps.sweep });
  return {
    name: "identity",
    routes: (router) => {
      router.service(UserService, userImpl);
      router.service(OperatorService, operatorImpl);
    },
    async start() {
      sweeper.start();
      outbox.startRelay();
    },
    async stop() {
      outbox.stop();
      await sweeper.stop();
    },
  };
}
