import type { Db } from "mongodb";
import {
  createCountSignal,
  createOutbox,
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
import { createTeam } from "./team.js";

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
  /** How long a pending change is its writer's before the relay finishes it (tests shorten it). */
  outboxGraceMs?: number;
}): Promise<ServiceModule> {
  const stored = createUserRepository(deps.db);
  const storedOperators = createOperatorRepository(deps.db);
  const operators = withOperatorCache(storedOperators, deps.redis);
  const users = withUserCache(stored, deps.redis);
  // Pending changes live in the documents written: user.updated events in the user's record,
  // owner gains in the operator's, owner losses in the team's (team.ts registers those two).
  const outbox = createOutbox({ db: deps.db, nats: deps.nats, log: deps.log, graceMs: deps.outboxGraceMs });
  outbox.register("users");
  const team = createTeam({ operators, outbox, log: deps.log });
  await Promise.all([stored.ensureIndexes(), storedOperators.ensureIndexes(), outbox.ensureIndexes()]);
  const userImpl = createUserService({
    users,
    outbox,
    nats: deps.nats,
    signal: createCountSignal(deps.redis, "users"),
    signalRevocation: async (tenantId, userId, ms) => {
      await deps.redis.redis.eval(SIGNAL_SCRIPT, 1, revocationKey(deps.redis, tenantId, userId), String(ms), String(REVOCATION_TTL_SECONDS));
    },
  });
  const operatorImpl = createOperatorService({
    operators,
    team,
    dummyHash: await createDummyHash(),
    sessionTtlSeconds: deps.sessionTtlSeconds,
  });
  return {
    name: "identity",
    routes: (router) => {
      router.service(UserService, userImpl);
      router.service(OperatorService, operatorImpl);
    },
    async start() {
      outbox.startRelay();
    },
    async stop() {
      await outbox.stop();
    },
  };
}
