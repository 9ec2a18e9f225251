import { isoOf } from "@feeds/kit";
import { OperatorStatus, Role, type Operator, type User } from "@feeds/proto/feeds/identity/v1/identity";
import { TenantStatus, type Tenant } from "@feeds/proto/feeds/tenancy/v1/tenancy";

// Protobuf messages → the interface's JSON resources (snake_case, ISO 8601 times).

export const tenantJson = (t: Tenant | undefined) =>
  t && {
    id: t.id,
    name: t.name,
    api_key: t.apiKey,
    status: t.status === TenantStatus.ACTIVE ? "active" : "suspended",
    created_at: isoOf(t.createdAt),
    rate_limit_per_minute: t.rateLimitPerMinute || null,
    allowed_origins: [...t.allowedOrigins],
  };

/** A tenant as its own operators see it: without its rate limit. */
export const operatorTenantJson = (t: Tenant | undefined) => {
  const j = tenantJson(t);
  return j && { id: j.id, name: j.name, api_key: j.api_key, status: j.status, created_at: j.created_at, allowed_origins: j.allowed_origins };
};

const roleName = (r: Role) => (r === Role.STAFF ? "staff" : r === Role.OWNER ? "owner" : "member");

export const operatorJson = (o: Operator | undefined) =>
  o && { id: o.id, name: o.name, email: o.email, role: roleName(o.role), tenant_id: o.tenantId || null };

export const teammateJson = (o: Operator | undefined) =>
  o && {
    id: o.id,
    email: o.email,
    name: o.name,
    role: roleName(o.role),
    status: o.status === OperatorStatus.ACTIVE ? "active" : "disabled",
    created_at: isoOf(o.createdAt),
    invite_pending: o.invitePending,
  };

export const customOf = (json: string): Record<string, unknown> => (json ? (JSON.parse(json) as Record<string, unknown>) : {});

export const userJson = (u: User | undefined) =>
  u && { id: u.id, custom: customOf(u.customJson), created_at: isoOf(u.createdAt), updated_at: isoOf(u.updatedAt) };

/** Operator list view: `custom` deliberately absent. */
export const userListJson = (u: User) => ({
  id: u.id,
  created_at: isoOf(u.createdAt),
  updated_at: isoOf(u.updatedAt),
  revoked_before: isoOf(u.revokedBefore),
});

export const page = <T>(results: T[], next: string) => ({ results, next: next || null });
