import { z } from "zod";
import { isoDateTime, pageOf } from "./responses.js";
import { operatorRole } from "./schemas.js";

// Response schemas of the operator console and platform administration (interface section 2:
// Operator, Teammate, Tenant, User list view; contract section 2 for the rest).

export const operatorSchema = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string(),
  role: z.enum(["staff", "owner", "member"]),
  tenant_id: z.string().nullable().describe("null for platform staff"),
});
/** Answer of login and invite acceptance. */
export const operatorSessionSchema = z.object({ token: z.string(), expires_at: isoDateTime, operator: operatorSchema });

export const teammateSchema = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  role: operatorRole,
  status: z.enum(["active", "disabled"]),
  created_at: isoDateTime,
  invite_pending: z.boolean().describe("true until the invite is accepted and a password set"),
});
export const teammatePage = pageOf(teammateSchema);
/** Answer of an invite and of the admin's create-operator. */
export const inviteResultSchema = z.object({ teammate: teammateSchema, invite_token: z.string(), expires_at: isoDateTime });

/** A tenant as its operators see it (never its api_secret). */
export const tenantSchema = z.object({
  id: z.string(),
  name: z.string(),
  api_key: z.string(),
  status: z.enum(["active", "suspended"]),
  created_at: isoDateTime,
  allowed_origins: z.array(z.string()).describe("browser origins whose pages may call the API with this tenant's tokens (CORS)"),
});
/** A tenant as platform staff see it: also its rate limit (null: the default applies). */
export const adminTenantSchema = tenantSchema.extend({ rate_limit_per_minute: z.number().int().min(1).nullable() });
export const adminTenantPage = pageOf(adminTenantSchema);
export const createdTenantSchema = z.object({ tenant: adminTenantSchema, api_secret: z.string().describe("answered once") });
export const secretSchema = z.object({ api_secret: z.string().describe("answered once") });

/** Operator list view of an end-user: `custom` deliberately absent. */
export const userListItemSchema = z.object({ id: z.string(), created_at: isoDateTime, updated_at: isoDateTime, revoked_before: isoDateTime });
export const userListPage = pageOf(userListItemSchema);

/** `GET /operator/signal` */
export const operatorSignalSchema = z.object({
  version: z.number().int().min(0),
  counts: z.object({ activities: z.number().int().min(0), users: z.number().int().min(0), webhook_events: z.number().int().min(0) }),
});
