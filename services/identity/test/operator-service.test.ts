import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox } from "@feeds/kit";
import { OperatorStatus, Role } from "@feeds/proto/feeds/identity/v1/identity";
import { createOperatorRepository, type OperatorDoc } from "../src/operator-repository.js";
import { createTeam, gainChange, lossChange } from "../src/team.js";
import { codeOf, identityHarness, PASSWORD } from "./harness.js";

// The team rules against real storage: the last active owner is kept by a conditional update on
// the tenant's owner count, not a lock, so racing requests are raced here for real.

describe("team rules", { timeout: 60_000 }, () => {
  const h = identityHarness("identity_team");
  beforeAll(h.open);
  afterAll(h.close);

  it("the loser of a race for the last two owners gets 409, and the count stays exact", async () => {
    for (let round = 0; round < 8; round++) {
      const t = h.newTenant();
      const a = await h.invite(t, "owner");
      const b = await h.invite(t, "owner");
      expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
      const change = (caller: string, target: string) =>
        round % 2 === 0
          ? h.operators.changeRole({ operatorId: target, role: Role.MEMBER }, h.as(t, caller))
          : h.operators.setOperatorStatus({ operatorId: target, status: OperatorStatus.DISABLED }, h.as(t, caller));
      const codes = await Promise.all([codeOf(change(a.id, b.id)), codeOf(change(b.id, a.id))]);
      expect(codes.sort(), `round ${round}`).toEqual(["CONFLICT", "OK"]);
      expect(await h.owners(t), `round ${round}`).toEqual({ counted: 1, active: 1 });
    }
  });

  it("owners disabling each other all at once leave an active owner, and the count is exact", async () => {
    const t = h.newTenant();
    const team: { id: string }[] = [];
    for (let i = 0; i < 4; i++) team.push(await h.invite(t, "owner"));
    const codes = await Promise.all(
      team.flatMap((caller) =>
        team
          .filter((target) => target !== caller)
          .map((target) => codeOf(h.operators.setOperatorStatus({ operatorId: target.id, status: OperatorStatus.DISABLED }, h.as(t, caller.id)))),
      ),
    );
    expect(codes).toContain("OK");
    const { counted, active } = await h.owners(t);
    expect(active).toBeGreaterThanOrEqual(1);
    expect(counted).toBe(active);
  });

  it("pending and disabled owners are not active: they count once accepted or enabled", async () => {
    const t = h.newTenant();
    const a = await h.invite(t, "owner");
    const b = await h.invite(t, "owner");
    const pending = await h.invite(t, "owner", false);
    const disabled = await h.invite(t, "owner");
    expect(await codeOf(h.operators.setOperatorStatus({ operatorId: disabled.id, status: OperatorStatus.DISABLED }, h.as(t, a.id)))).toBe("OK");
    expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
    expect(await codeOf(h.operators.changeRole({ operatorId: b.id, role: Role.MEMBER }, h.as(t, a.id)))).toBe("OK");
    // A pending owner's role changes move nothing.
    expect(await codeOf(h.operators.changeRole({ operatorId: pending.id, role: Role.MEMBER }, h.as(t, a.id)))).toBe("OK");
    expect(await codeOf(h.operators.changeRole({ operatorId: pending.id, role: Role.OWNER }, h.as(t, a.id)))).toBe("OK");
    expect(await h.owners(t)).toEqual({ counted: 1, active: 1 });
    expect(await codeOf(h.operators.setOperatorStatus({ operatorId: disabled.id, status: OperatorStatus.ACTIVE }, h.as(t, a.id)))).toBe("OK");
    expect(await codeOf(h.operators.acceptInvite({ token: pending.token, password: PASSWORD }))).toBe("OK");
    expect(await h.owners(t)).toEqual({ counted: 3, active: 3 });
    // Enabling an active owner again, or promoting an owner, moves nothing either.
    expect(await codeOf(h.operators.setOperatorStatus({ operatorId: disabled.id, status: OperatorStatus.ACTIVE }, h.as(t, a.id)))).toBe("OK");
    expect(await codeOf(h.operators.changeRole({ operatorId: disabled.id, role: Role.OWNER }, h.as(t, a.id)))).toBe("OK");
    expect(await h.owners(t)).toEqual({ counted: 3, active: 3 });
  });

  it("answers 403, never 404, for ids outside the tenant and for oneself", async () => {
    const t = h.newTenant();
    const a = await h.invite(t, "owner");
    const m = await h.invite(t, "member");
    const x = await h.invite(h.newTenant(), "owner");
    expect(await codeOf(h.operators.changeRole({ operatorId: x.id, role: Role.MEMBER }, h.as(t, a.id)))).toBe("FORBIDDEN");
    expect(await codeOf(h.operators.changeRole({ operatorId: "op_nope", role: Role.MEMBER }, h.as(t, a.id)))).toBe("FORBIDDEN");
    expect(await codeOf(h.operators.setOperatorStatus({ operatorId: a.id, status: OperatorStatus.DISABLED }, h.as(t, a.id)))).toBe("FORBIDDEN");
    expect(await codeOf(h.operators.changeRole({ operatorId: a.id, role: Role.MEMBER }, h.as(t, m.id)))).toBe("FORBIDDEN");
  });

  it("a tenant whose team was never counted is counted once from its operators", async () => {
    const t = h.newTenant();
    const now = new Date();
    const op = (role: OperatorDoc["role"], extra: Partial<OperatorDoc> = {}): OperatorDoc => ({
      _id: `op_${randomBytes(6).toString("hex")}`,
      tenant_id: t,
      email: `${randomBytes(6).toString("hex")}@example.com`,
      name: role,
      role,
      status: "active",
      password_hash: "x",
      invite: null,
      created_at: now,
      updated_at: now,
      ...extra,
    });
    const [a, b, c] = [op("owner"), op("owner"), op("owner")];
    await h.operatorDocs().insertMany([a, b, c, op("owner", { status: "disabled" }), op("owner", { password_hash: null }), op("member")]);
    expect(await h.owners(t)).toEqual({ counted: undefined, active: 3 });
    expect(await codeOf(h.operators.changeRole({ operatorId: b._id, role: Role.MEMBER }, h.as(t, a._id)))).toBe("OK");
    expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
    expect(await codeOf(h.operators.changeRole({ operatorId: c._id, role: Role.MEMBER }, h.as(t, a._id)))).toBe("OK");
    expect(await codeOf(h.operators.changeRole({ operatorId: a._id, role: Role.MEMBER }, h.as(t, c._id)))).toBe("FORBIDDEN");
    expect(await h.owners(t)).toEqual({ counted: 1, active: 1 });
  });

  it("concurrent acceptances of one invite: exactly one wins, and the token is spent with it", async () => {
    const t = h.newTenant();
    await h.invite(t, "owner");
    const invited = await h.invite(t, "owner", false);
    const codes = await Promise.all(Array.from({ length: 5 }, () => codeOf(h.operators.acceptInvite({ token: invited.token, password: PASSWORD }))));
    expect(codes.sort()).toEqual(["OK", "UNAUTHENTICATED", "UNAUTHENTICATED", "UNAUTHENTICATED", "UNAUTHENTICATED"]);
    expect((await h.operatorDocs().findOne({ _id: invited.id }))?.invite).toBeNull();
    expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
    expect(await codeOf(h.operators.acceptInvite({ token: invited.token, password: PASSWORD }))).toBe("UNAUTHENTICATED");
  });
});

describe("a team change whose writer died is finished by the relay", { timeout: 60_000 }, () => {
  const h = identityHarness("identity_team_relay");
  beforeAll(h.open);
  afterAll(h.close);

  /** The repository and an outbox whose relay takes a change at once (no grace). */
  function relayed() {
    const repo = createOperatorRepository(h.env.db);
    const outbox = createOutbox({ db: h.env.db, nats: h.env.nats, log: h.env.log, graceMs: 0 });
    createTeam({ operators: repo, outbox, log: h.env.log });
    return { repo, outbox };
  }
  const ownerState = { role: "owner", status: "active", password_hash: { $ne: null } } as const;

  it("a loss taken from the count but never carried out is given back, and can no longer be carried out", async () => {
    const { repo, outbox } = relayed();
    const t = h.newTenant();
    await h.invite(t, "owner");
    const b = await h.invite(t, "owner");
    const change = lossChange(outbox, t, b.id);
    expect(await repo.takeOwner(t, outbox.forUpdate(change))).toBe(true);
    expect(await h.owners(t)).toEqual({ counted: 1, active: 2 });
    await outbox.relayOnce();
    expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
    // The writer, late: its operator update matches nothing now.
    expect(await repo.updateIf(b.id, ownerState, { role: "member" }, { loss: change.id })).toBeNull();
    await outbox.relayOnce();
    expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
  });

  it("a loss carried out whose writer died before clearing it stays counted", async () => {
    const { repo, outbox } = relayed();
    const t = h.newTenant();
    await h.invite(t, "owner");
    const b = await h.invite(t, "owner");
    const change = lossChange(outbox, t, b.id);
    expect(await repo.takeOwner(t, outbox.forUpdate(change))).toBe(true);
    expect(await repo.updateIf(b.id, ownerState, { role: "member" }, { loss: change.id })).not.toBeNull();
    await outbox.relayOnce();
    expect(await h.owners(t)).toEqual({ counted: 1, active: 1 });
    expect((await h.teamDocs().findOne({ _id: t }))?.outbox ?? []).toEqual([]);
  });

  it("a gain whose writer died before counting it is counted by the relay, once", async () => {
    const { repo, outbox } = relayed();
    const t = h.newTenant();
    await h.invite(t, "owner");
    const m = await h.invite(t, "member");
    const change = gainChange(outbox, t, m.id);
    const gained = await repo.updateIf(m.id, { role: "member", status: "active", password_hash: { $ne: null } }, { role: "owner" }, { gain: outbox.forUpdate(change) });
    expect(gained?.role).toBe("owner");
    expect(await h.owners(t)).toEqual({ counted: 1, active: 2 });
    await outbox.relayOnce();
    expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
    // A second pass, and the writer late: nothing more.
    await outbox.relayOnce();
    await repo.addOwner(t, change.id);
    expect(await h.owners(t)).toEqual({ counted: 2, active: 2 });
  });
});
