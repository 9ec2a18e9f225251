import { z } from "zod";
import { customObject } from "./schemas-custom.js";

// Request schemas of every route, shared by the gateway (validation, OpenAPI) and SDK users.
// Identifier rules are the contract's section 4.

export const idPattern = /^[A-Za-z0-9_\-.@]{1,128}$/;
export const groupPattern = /^[A-Za-z0-9_]{1,64}$/;

export const idString = z.string().regex(idPattern, "must match ^[A-Za-z0-9_\\-.@]{1,128}$");
export const groupString = z.string().regex(groupPattern, "must match ^[A-Za-z0-9_]{1,64}$");

/** `limit` 1..100 (default per route), `next`, and its deprecated alias `cursor` (next wins). */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  next: z.string().min(1).max(2048).optional(),
  cursor: z.string().min(1).max(2048).optional(),
});
export type PageQuery = z.infer<typeof pageQuery>;

export const userIdParams = z.object({ id: idString });
// Ids minted by the server: no control characters (a NUL reached the store as a 500).
const serverId = z
  .string()
  .min(1)
  .max(64)
  .refine((s) => ![...s].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f), "must not contain control characters");
export const tenantIdParams = z.object({ id: serverId });
export const operatorIdParams = z.object({ id: serverId });
export const queueParams = z.object({ queue: z.enum(["fanout", "notify", "webhooks"]) });

export const upsertUserBody = z.object({ custom: customObject.default({}) });

/** Batch envelopes answer 400 only for the list itself; each item is checked on its own. */
const batchList = (item: z.ZodType) => z.array(item).min(1, "at least 1 item").max(100, "at most 100 items");
export const batchUsersBody = z.object({ users: batchList(z.looseObject({})) });
export const batchUserItem = z.object({ id: idString, custom: customObject.default({}) });

export const loginBody = z.object({
  email: z.string().max(254).pipe(z.email()),
  password: z.string().min(1).max(1024),
});
export const acceptInviteBody = z.object({
  token: z.string().min(1).max(1024),
  password: z.string().min(12).max(1024),
});

export const operatorRole = z.enum(["owner", "member"]);
export const inviteBody = z.object({
  email: z.string().max(254).pipe(z.email()),
  name: z.string().min(1).max(200),
  role: operatorRole,
});
export const roleBody = z.object({ role: operatorRole });

export const createTenantBody = z.object({
  name: z.string().trim().min(1).max(200),
  rate_limit_per_minute: z.number().int().min(1).max(10_000_000).optional(),
});
