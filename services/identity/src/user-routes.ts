import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  MAX_CUSTOM_BYTES,
  decodeCursor,
  encodeCursor,
  isId,
  notFound,
  pageLimit,
  requireTenant,
  toTimestamp,
  validationFailed,
  type FieldError,
} from "@feeds/kit";
import { UserSchema, UserService, type User } from "@feeds/proto/feeds/identity/v1/identity";
import type { UserDoc, UserRepository } from "./user-repository.js";

export interface UserServiceDeps {
  users: UserRepository;
  /** Publishes a user's revoked_before to every gateway replica (epoch ms). */
  signalRevocation(tenantId: string, userId: string, revokedBeforeMs: number): Promise<void>;
}

export const userToProto = (d: UserDoc): User =>
  create(UserSchema, {
    id: d.id,
    customJson: d.custom_json,
    createdAt: toTimestamp(d.created_at),
    updatedAt: toTimestamp(d.updated_at),
    revokedBefore: toTimestamp(d.revoked_before),
  });

/** Checks one user item; answers its field errors (empty when valid). */
function checkUser(id: string, customJson: string, prefix = ""): FieldError[] {
  const errors: FieldError[] = [];
  if (!isId(id)) errors.push({ path: `${prefix}id`, message: "must match ^[A-Za-z0-9_\\-.@]{1,128}$" });
  if (Buffer.byteLength(customJson) > MAX_CUSTOM_BYTES) {
    errors.push({ path: `${prefix}custom`, message: "must be at most 64 KB" });
  } else {
    try {
      const v: unknown = JSON.parse(customJson || "{}");
      if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not an object");
    } catch {
      errors.push({ path: `${prefix}custom`, message: "must be an object" });
    }
  }
  return errors;
}

export function createUserService(deps: UserServiceDeps): ServiceImpl<typeof UserService> {
  const { users } = deps;
  return {
    async upsertUser(req, ctx) {
      const tenant = requireTenant(ctx);
      const errors = checkUser(req.id, req.customJson);
      if (errors.length) throw validationFailed(errors);
      const { doc, created } = await users.upsert(tenant, req.id, req.customJson || "{}");
      return { user: userToProto(doc), created };
    },

    async getUser(req, ctx) {
      const doc = await users.get(requireTenant(ctx), req.id);
      if (!doc) throw notFound("user not found");
      return { user: userToProto(doc) };
    },

    async getUsers(req, ctx) {
      const tenant = requireTenant(ctx);
      const ids = [...new Set(req.ids)].filter(isId);
      if (ids.length === 0) return { users: [] };
      return { users: (await users.getMany(tenant, ids)).map(userToProto) };
    },

    async listUsers(req, ctx) {
      const tenant = requireTenant(ctx);
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      const rows = await users.page(tenant, limit, after ? { created_at: new Date(after[0]), id: after[1] } : null);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        users: page.map(userToProto),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last.id]) : "",
      };
    },

    async importUsers(req, ctx) {
      const tenant = requireTenant(ctx);
      // Items are independent: one failure never rolls back the others.
      const results = await Promise.all(
        req.users.map(async (u, index) => {
          if (checkUser(u.id, u.customJson).length) return { index, ok: false, id: "", code: "VALIDATION_FAILED" };
          try {
            await users.upsert(tenant, u.id, u.customJson || "{}");
            return { index, ok: true, id: u.id, code: "" };
          } catch {
            return { index, ok: false, id: "", code: "INTERNAL" };
          }
        }),
      );
      return { results };
    },

    async revokeTokens(req, ctx) {
      const tenant = requireTenant(ctx);
      const at = new Date();
      const doc = await users.revoke(tenant, req.id, at);
      if (!doc) throw notFound("user not found");
      await deps.signalRevocation(tenant, req.id, at.getTime());
      return { revokedBefore: toTimestamp(at) };
    },
  };
}
