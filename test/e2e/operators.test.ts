import { describe, expect, it } from "vitest";
import { envelope, http, newIp, newOperator, newTenant, staffToken, uniqueEmail, PASSWORD } from "../support/api.js";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

async function team(token: string) {
  const res = await http("GET", "/operator/team?limit=100", { token });
  return res.body.results as { id: string; role: string; status: string; invite_pending: boolean }[];
}

describe("operator login", () => {
  it("validation failures are 400 and distinguishable from credential failures", async () => {
    for (const body of [{}, { email: "not-an-email", password: "x" }, { email: `${"a".repeat(250)}@x.io`, password: "x" }, { email: "a@b.io", password: "" }, { email: "a@b.io", password: "x".repeat(1025) }]) {
      const res = await http("POST", "/operator/login", { body, ip: newIp() });
      expect(res.status).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
  });

  it("the four credential failures are identical in body and timing", async () => {
    const t = await newTenant();
    const wrongPw = [await newOperator(t.id, "member"), await newOperator(t.id, "member")];
    const pending = [await newOperator(t.id, "member", { accept: false }), await newOperator(t.id, "member", { accept: false })];
    const disabled = [await newOperator(t.id, "member"), await newOperator(t.id, "member")];
    const owner = await newOperator(t.id, "owner");
    for (const d of disabled) {
      expect((await http("POST", `/operator/team/${d.id}/disable`, { token: owner.token })).status).toBe(200);
    }
    const unknown = [uniqueEmail("ghost"), uniqueEmail("ghost")];
    const kinds: Record<string, { email: string; password: string }[]> = {
      unknown: unknown.map((email) => ({ email, password: PASSWORD })),
      wrongPassword: wrongPw.map((o) => ({ email: o.email, password: "not the password" })),
      invitePending: pending.map((o) => ({ email: o.email, password: PASSWORD })),
      disabled: disabled.map((o) => ({ email: o.email, password: PASSWORD })),
    };
    const times: Record<string, number[]> = { unknown: [], wrongPassword: [], invitePending: [], disabled: [] };
    const bodies = new Set<string>();
    // Interleaved, 8 attempts per email (under the per-email limit), one address per attempt.
    for (let round = 0; round < 8; round++) {
      for (const [kind, creds] of Object.entries(kinds)) {
        for (const c of creds) {
          const started = performance.now();
          const res = await http("POST", "/operator/login", { body: c, ip: newIp() });
          times[kind]!.push(performance.now() - started);
          expect(res.status).toBe(401);
          const { requestId: _ignored, ...rest } = envelope(res);
          bodies.add(JSON.stringify(rest));
        }
      }
    }
    expect(bodies.size).toBe(1);
    const medians = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
    const values = Object.values(medians);
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    expect(hi / lo, JSON.stringify(medians)).toBeLessThanOrEqual(1.2);
  });

  it("logs in, reads /operator/me, logs out", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const login = await http("POST", "/operator/login", { body: { email: owner.email.toUpperCase(), password: PASSWORD }, ip: newIp() });
    expect(login.status).toBe(200);
    expect(login.body.token.length).toBeGreaterThanOrEqual(43);
    const hours = (Date.parse(login.body.expires_at) - Date.now()) / 3600_000;
    expect(hours).toBeGreaterThan(11.9);
    expect(hours).toBeLessThanOrEqual(12);
    expect(login.body.operator).toEqual({ id: owner.id, name: expect.any(String), email: owner.email, role: "owner", tenant_id: t.id });
    const me = await http("GET", "/operator/me", { token: login.body.token });
    expect(me.body).toEqual(login.body.operator);
    expect(JSON.stringify(me.body)).not.toMatch(/password|hash/);
    expect((await http("POST", "/operator/logout", { token: login.body.token })).status).toBe(204);
    expect((await http("GET", "/operator/me", { token: login.body.token })).status).toBe(401);
    // Other sessions of the same operator live on.
    expect((await http("GET", "/operator/me", { token: owner.token })).status).toBe(200);
  });
});

describe("invites and team", () => {
  it("an invite is single-use, and accepting it answers like login", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const email = uniqueEmail("new");
    const inv = await http("POST", "/operator/team/invite", { token: owner.token, body: { email, name: "New One", role: "member" } });
    expect(inv.status).toBe(201);
    expect(inv.body.teammate).toMatchObject({ email, name: "New One", role: "member", status: "active", invite_pending: true });
    const days = (Date.parse(inv.body.expires_at) - Date.now()) / 86400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThanOrEqual(7);
    // Not yet accepted: cannot log in.
    expect((await http("POST", "/operator/login", { body: { email, password: PASSWORD }, ip: newIp() })).status).toBe(401);
    const short = await http("POST", "/operator/invite/accept", { body: { token: inv.body.invite_token, password: "short" }, ip: newIp() });
    expect(short.status).toBe(400);
    const ok = await http("POST", "/operator/invite/accept", { body: { token: inv.body.invite_token, password: PASSWORD }, ip: newIp() });
    expect(ok.status).toBe(200);
    expect(ok.body.operator).toMatchObject({ email, role: "member", tenant_id: t.id });
    const again = await http("POST", "/operator/invite/accept", { body: { token: inv.body.invite_token, password: PASSWORD }, ip: newIp() });
    const unknown = await http("POST", "/operator/invite/accept", { body: { token: "no-such-token", password: PASSWORD }, ip: newIp() });
    expect(again.status).toBe(401);
    expect(unknown.status).toBe(401);
    const strip = (a: typeof again) => ({ ...envelope(a), requestId: "" });
    expect(strip(again)).toEqual(strip(unknown));
    const listed = (await team(owner.token)).find((m) => m.id === inv.body.teammate.id);
    expect(listed?.invite_pending).toBe(false);
    // An email already present answers 409.
    const dup = await http("POST", "/operator/team/invite", { token: owner.token, body: { email, name: "Dup", role: "member" } });
    expect(dup.status).toBe(409);
  });

  it("concurrent acceptances of one invite: exactly one wins", async () => {
    const t = await newTenant();
    const invited = await newOperator(t.id, "member", { accept: false });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => http("POST", "/operator/invite/accept", { body: { token: invited.inviteToken, password: PASSWORD }, ip: newIp() })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401]);
  });

  it("a disabled operator's invite fails like an unknown one", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const pending = await newOperator(t.id, "member", { accept: false });
    expect((await http("POST", `/operator/team/${pending.id}/disable`, { token: owner.token })).status).toBe(200);
    const res = await http("POST", "/operator/invite/accept", { body: { token: pending.inviteToken, password: PASSWORD }, ip: newIp() });
    expect(res.status).toBe(401);
  });

  it("role and status rules: 403 for members, staff, self and other tenants' ids", async () => {
    const t = await newTenant();
    const other = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    const foreign = await newOperator(other.id, "member");
    const patch = (token: string, id: string, role: string) => http("PATCH", `/operator/team/${id}`, { token, body: { role } });

    expect((await patch(member.token, owner.id, "member")).status).toBe(403);
    expect((await patch(owner.token, owner.id, "member")).status).toBe(403);
    // Another tenant's operator and an unknown id both answer 403, never 404.
    expect((await patch(owner.token, foreign.id, "owner")).status).toBe(403);
    expect((await patch(owner.token, "op_doesnotexist", "owner")).status).toBe(403);
    expect((await patch(await staffToken(), member.id, "owner")).status).toBe(403);
    expect((await patch(owner.token, member.id, "admin")).status).toBe(400);
    for (const action of ["disable", "enable"]) {
      expect((await http("POST", `/operator/team/${owner.id}/${action}`, { token: owner.token })).status).toBe(403);
      expect((await http("POST", `/operator/team/${foreign.id}/${action}`, { token: owner.token })).status).toBe(403);
      expect((await http("POST", `/operator/team/${owner.id}/${action}`, { token: member.token })).status).toBe(403);
    }

    const promoted = await patch(owner.token, member.id, "owner");
    expect(promoted.status).toBe(200);
    expect(promoted.body).toEqual({
      id: member.id,
      email: member.email,
      name: expect.any(String),
      role: "owner",
      status: "active",
      created_at: expect.any(String),
      invite_pending: false,
    });
    // Two owners: one may demote the other.
    expect((await patch(member.token, owner.id, "member")).status).toBe(200);
    // The demoted owner lost owner rights at once.
    expect((await http("POST", "/operator/tenant/rotate-secret", { token: owner.token })).status).toBe(403);
  });

  it("disable ends sessions and blocks login; enable restores login", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    // The session is in use (and in identity's session cache) before the disable.
    expect((await http("GET", "/operator/me", { token: member.token })).status).toBe(200);
    const disabled = await http("POST", `/operator/team/${member.id}/disable`, { token: owner.token });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ id: member.id, status: "disabled" });
    expect((await http("GET", "/operator/me", { token: member.token })).status).toBe(401);
    expect((await http("POST", "/operator/login", { body: { email: member.email, password: PASSWORD }, ip: newIp() })).status).toBe(401);
    const enabled = await http("POST", `/operator/team/${member.id}/enable`, { token: owner.token });
    expect(enabled.body).toMatchObject({ id: member.id, status: "active" });
    // Enabling again brings no ended session back.
    expect((await http("GET", "/operator/me", { token: member.token })).status).toBe(401);
    expect((await http("POST", "/operator/login", { body: { email: member.email, password: PASSWORD }, ip: newIp() })).status).toBe(200);
    const listed = (await team(owner.token)).map((m) => m.id);
    expect(listed).toEqual([owner.id, member.id]);
  });

  it("two concurrent demotions of the last two owners leave exactly one owner", async () => {
    for (let round = 0; round < 6; round++) {
      const t = await newTenant();
      const a = await newOperator(t.id, "owner");
      const b = await newOperator(t.id, "owner");
      const [ra, rb] = await Promise.all([
        http("PATCH", `/operator/team/${b.id}`, { token: a.token, body: { role: "member" } }),
        http("PATCH", `/operator/team/${a.id}`, { token: b.token, body: { role: "member" } }),
      ]);
      const statuses = [ra.status, rb.status].sort();
      expect(statuses[0]).toBe(200);
      expect([403, 409]).toContain(statuses[1]);
      const loser = ra.status === 200 ? rb : ra;
      if (loser.status === 409) expect(envelope(loser).message).toMatch(/no active owner/);
      const owners = (await team(ra.status === 200 ? a.token : b.token)).filter((m) => m.role === "owner" && m.status === "active");
      expect(owners).toHaveLength(1);
    }
  });

  it("two concurrent disables of the last two owners leave exactly one active owner", async () => {
    const t = await newTenant();
    const a = await newOperator(t.id, "owner");
    const b = await newOperator(t.id, "owner");
    const [ra, rb] = await Promise.all([
      http("POST", `/operator/team/${b.id}/disable`, { token: a.token }),
      http("POST", `/operator/team/${a.id}/disable`, { token: b.token }),
    ]);
    expect([ra.status, rb.status].filter((s) => s === 200)).toHaveLength(1);
    const survivor = ra.status === 200 ? a : b;
    const owners = (await team(survivor.token)).filter((m) => m.role === "owner" && m.status === "active");
    expect(owners.map((o) => o.id)).toEqual([survivor.id]);
  });

});

describe("tenant console", () => {
  it("owner and member read their tenant; staff gets 403; only owners rotate and invite", async () => {
    const t = await newTenant({ name: "Console Co" });
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    const staff = await staffToken();
    for (const token of [owner.token, member.token]) {
      const res = await http("GET", "/operator/tenant", { token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: t.id, name: "Console Co", api_key: t.apiKey, status: "active", created_at: expect.any(String), allowed_origins: [] });
    }
    const s = await http("GET", "/operator/tenant", { token: staff });
    expect(s.status).toBe(403);
    expect(envelope(s).code).toBe("FORBIDDEN");
    expect((await http("GET", "/operator/inspect/users", { token: staff })).status).toBe(403);
    expect((await http("GET", "/operator/team", { token: staff })).status).toBe(403);
    expect((await http("POST", "/operator/tenant/rotate-secret", { token: member.token })).status).toBe(403);
    expect((await http("POST", "/operator/tenant/rotate-secret", { token: staff })).status).toBe(403);
    expect((await http("POST", "/operator/team/invite", { token: member.token, body: { email: uniqueEmail(), name: "x", role: "member" } })).status).toBe(403);
    expect((await http("GET", "/operator/team", { token: member.token })).status).toBe(200);
    expect((await http("GET", "/operator/me")).status).toBe(401);
  });

  it("the inspector lists users newest first, keyset-paged, without custom", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (const id of ["u1", "u2", "u3", "u4", "u5"]) {
      await http("PUT", `/v1/users/${id}`, { token: server, body: { custom: { secret: id } } });
    }
    const member = await newOperator(t.id, "member");
    const seen: string[] = [];
    let next: string | null = null;
    do {
      const res: { status: number; body: { results: Record<string, unknown>[]; next: string | null } } = await http(
        "GET",
        `/operator/inspect/users?limit=2${next ? `&next=${next}` : ""}`,
        { token: member.token },
      );
      expect(res.status).toBe(200);
      for (const u of res.body.results) {
        expect(Object.keys(u).sort()).toEqual(["created_at", "id", "revoked_before", "updated_at"]);
        seen.push(u.id as string);
      }
      next = res.body.next;
    } while (next);
    expect(seen).toEqual(["u5", "u4", "u3", "u2", "u1"]);
    expect((await http("GET", "/operator/inspect/users?next=bad!", { token: member.token })).status).toBe(400);
  });
});

describe("platform admin", () => {
  it("is staff only: no token 401, tenant operators and tenant tokens 403", async () => {
    const t = await newTenant();
    const owner = await newOperator(t.id, "owner");
    expect((await http("GET", "/admin/tenants")).status).toBe(401);
    expect((await http("GET", "/admin/tenants", { token: owner.token })).status).toBe(403);
    expect((await http("POST", "/admin/tenants", { token: owner.token, body: { name: "x" } })).status).toBe(403);
    expect((await http("GET", "/admin/queues", { token: owner.token })).status).toBe(403);
    expect((await http("GET", "/admin/tenants", { token: await t.server() })).status).toBe(403);
  });

  it("creates, lists, reads tenants and provisions operators", async () => {
    const staff = await staffToken();
    const created = await http("POST", "/admin/tenants", { token: staff, body: { name: "Listed", rate_limit_per_minute: 1234 } });
    expect(created.status).toBe(201);
    expect(created.body.api_secret.length).toBeGreaterThanOrEqual(32);
    expect(created.body.tenant).toMatchObject({ name: "Listed", status: "active", rate_limit_per_minute: 1234 });
    const id = created.body.tenant.id;
    const read = await http("GET", `/admin/tenants/${id}`, { token: staff });
    expect(read.body).toEqual(created.body.tenant);
    expect((await http("GET", "/admin/tenants/t_nope", { token: staff })).status).toBe(404);
    const ids: string[] = [];
    let next: string | null = null;
    do {
      const page: { body: { results: { id: string }[]; next: string | null } } = await http("GET", `/admin/tenants?limit=3${next ? `&next=${next}` : ""}`, { token: staff });
      ids.push(...page.body.results.map((r) => r.id));
      next = page.body.next;
    } while (next);
    expect(ids).toContain(id);
    expect(new Set(ids).size).toBe(ids.length);
    expect((await http("POST", "/admin/tenants", { token: staff, body: { name: "" } })).status).toBe(400);
    const op = await http("POST", `/admin/tenants/${id}/operators`, { token: staff, body: { email: uniqueEmail(), name: "First", role: "owner" } });
    expect(op.status).toBe(201);
    expect(op.body.teammate).toMatchObject({ role: "owner", invite_pending: true });
    expect(typeof op.body.invite_token).toBe("string");
    const missing = await http("POST", "/admin/tenants/t_nope/operators", { token: staff, body: { email: uniqueEmail(), name: "x", role: "owner" } });
    expect(missing.status).toBe(404);
    const queues = await http("GET", "/admin/queues", { token: staff });
    expect(queues.body.queues.map((q: { queue: string }) => q.queue).sort()).toEqual(["fanout", "notify", "webhooks"]);
  });
});
