import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createLogger, fromRpcError, scope, createInternalAuth, createLocalTransport, rootKeys } from "@feeds/kit";
import { OperatorService, OperatorStatus, Role } from "@feeds/proto/feeds/identity/v1/identity";
import { createOperatorService } from "../src/operator-routes.js";
import type { OperatorDoc, OperatorRepository, SessionDoc } from "../src/operator-repository.js";

// Unit rung of the ladder: the operator service with its repository replaced by an in-memory
// stand-in, served over Connect's in-memory router transport with the real plumbing.

function op(id: string, role: OperatorDoc["role"], extra: Partial<OperatorDoc> = {}): OperatorDoc {
  const now = new Date();
  return { _id: id, tenant_id: "t1", email: `${id}@x.io`, name: id, role, status: "active", password_hash: "h", invite: null, created_at: now, updated_at: now, ...extra };
}

function fakeRepository(docs: OperatorDoc[], beforeLocked?: () => void) {
  const byId = new Map(docs.map((d) => [d._id, d]));
  const sessions = new Map<string, SessionDoc>();
  const repo: Partial<OperatorRepository> = {
    byId: async (id) => (byId.has(id) ? { ...byId.get(id)! } : null),
    ofTenant: async (t) => [...byId.values()].filter((d) => d.tenant_id === t).map((d) => ({ ...d })),
    update: async (id, set) => {
      const d = byId.get(id);
      if (!d) return null;
      Object.assign(d, set);
      return { ...d };
    },
    deleteSessionsOf: async (id) => {
      for (const [k, s] of sessions) if (s.operator_id === id) sessions.delete(k);
      return { acknowledged: true, deletedCount: 0 };
    },
    withTeamLock: async (_t, fn) => {
      beforeLocked?.();
      return fn();
    },
  };
  return { repo: repo as OperatorRepository, byId };
}

function client(repo: OperatorRepository) {
  const log = createLogger({ LOG_LEVEL: "silent" }, "test");
  const transport = createLocalTransport((router) => router.service(OperatorService, createOperatorService({ operators: repo, dummyHash: "x", sessionTtlSeconds: 60 })), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
  return createClient(OperatorService, transport);
}

const as = (operatorId: string) => scope({ tenantId: "t1", caller: { kind: "operator", operatorId } });

async function codeOf(p: Promise<unknown>) {
  try {
    await p;
    return "OK";
  } catch (e) {
    return fromRpcError(e).code;
  }
}

describe("team rules", () => {
  it("answers 409 to the loser of a race for the last two owners", async () => {
    // a and b are owners; while b waits for the team lock, a demotes b.
    const { repo, byId } = fakeRepository([op("a", "owner"), op("b", "owner")], () => {
      byId.get("b")!.role = "member";
    });
    const c = client(repo);
    expect(await codeOf(c.changeRole({ operatorId: "a", role: Role.MEMBER }, as("b")))).toBe("CONFLICT");
    byId.get("b")!.role = "owner";
    expect(await codeOf(c.setOperatorStatus({ operatorId: "a", status: OperatorStatus.DISABLED }, as("b")))).toBe("CONFLICT");
    expect(byId.get("a")).toMatchObject({ role: "owner", status: "active" });
  });

  it("refuses a caller who stopped being an owner while waiting, when another owner remains", async () => {
    const { repo, byId } = fakeRepository([op("a", "owner"), op("b", "owner"), op("c", "owner")], () => {
      byId.get("b")!.role = "member";
    });
    expect(await codeOf(client(repo).changeRole({ operatorId: "c", role: Role.MEMBER }, as("b")))).toBe("FORBIDDEN");
    expect(byId.get("c")!.role).toBe("owner");
  });

  it("does not count pending or disabled owners as active", async () => {
    const { repo } = fakeRepository([
      op("a", "owner"),
      op("b", "owner"),
      op("p", "owner", { password_hash: null }),
      op("d", "owner", { status: "disabled" }),
    ]);
    const c = client(repo);
    expect(await codeOf(c.changeRole({ operatorId: "b", role: Role.MEMBER }, as("a")))).toBe("OK");
  });

  it("answers 403, never 404, for ids outside the tenant and for oneself", async () => {
    const { repo } = fakeRepository([op("a", "owner"), op("x", "owner", { tenant_id: "t2" })]);
    const c = client(repo);
    expect(await codeOf(c.changeRole({ operatorId: "x", role: Role.MEMBER }, as("a")))).toBe("FORBIDDEN");
    expect(await codeOf(c.changeRole({ operatorId: "nope", role: Role.MEMBER }, as("a")))).toBe("FORBIDDEN");
    expect(await codeOf(c.setOperatorStatus({ operatorId: "a", status: OperatorStatus.DISABLED }, as("a")))).toBe("FORBIDDEN");
  });
});
