import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { createInternalAuth, createLocalTransport, fromRpcError, rootKeys, scope, type ServiceModule } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { OperatorService, Role, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import { createIdentityModule } from "../src/module.js";
import type { OperatorDoc, TeamDoc } from "../src/operator-repository.js";

// The identity module against real MongoDB-wire storage, Redis and JetStream, in a namespace of
// its own removed afterwards, called over the in-process transport. Its relay is not started:
// tests that need one run a pass themselves.

export const PASSWORD = "correct horse battery";

export function identityHarness(prefix: string, opts: { sessionTtlSeconds?: number } = {}) {
  const env = createTestEnv(prefix, { db: true, redis: true, nats: { queues: ["notify"] } });
  let module: ServiceModule;
  let operators: Client<typeof OperatorService>;
  let users: Client<typeof UserService>;
  let staffId = "";

  async function open() {
    await env.open();
    module = await createIdentityModule({ db: env.db, redis: env.redis, nats: env.nats, sessionTtlSeconds: opts.sessionTtlSeconds ?? 3600, log: env.log });
    const transport = createLocalTransport((router) => module.routes(router), env.log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
    operators = createClient(OperatorService, transport);
    users = createClient(UserService, transport);
    const staff = await operators.ensureStaff({ email: `staff-${randomBytes(4).toString("hex")}@example.com`, name: "staff", password: PASSWORD });
    staffId = staff.operator?.id ?? "";
  }

  const as = (tenantId: string, operatorId: string) => scope({ tenantId, caller: { kind: "operator", operatorId } });

  /** Invites an operator onto `tenantId` as staff; accepts the invite unless told not to. */
  async function invite(tenantId: string, role: "owner" | "member", accept = true): Promise<{ id: string; email: string; token: string }> {
    const email = `${role}-${randomBytes(5).toString("hex")}@example.com`;
    const inv = await operators.createInvite({ email, name: role, role: role === "owner" ? Role.OWNER : Role.MEMBER }, as(tenantId, staffId));
    const id = inv.operator?.id ?? "";
    if (accept) await operators.acceptInvite({ token: inv.inviteToken, password: PASSWORD });
    return { id, email, token: inv.inviteToken };
  }

  const newTenant = () => `t_${randomBytes(6).toString("hex")}`;
  const operatorDocs = () => env.db.collection<OperatorDoc>("operators");
  const teamDocs = () => env.db.collection<TeamDoc>("operator_teams");

  /** The stored count and the number of active owners it stands for. */
  async function owners(tenantId: string): Promise<{ counted: number | undefined; active: number }> {
    const [team, active] = await Promise.all([
      teamDocs().findOne({ _id: tenantId }),
      operatorDocs().countDocuments({ tenant_id: tenantId, role: "owner", status: "active", password_hash: { $ne: null } }),
    ]);
    return { counted: team?.active_owners, active };
  }

  return {
    env,
    open,
    close: env.close,
    get operators() {
      return operators;
    },
    get users() {
      return users;
    },
    as,
    invite,
    newTenant,
    operatorDocs,
    teamDocs,
    owners,
  };
}

export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (e) {
    return fromRpcError(e).code;
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it is true or `ms` passed; answers whether it became true. */
export async function eventually(check: () => Promise<boolean>, ms: number, everyMs = 250): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}
