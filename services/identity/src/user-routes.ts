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
  newEvent,
  eventMessages,
  publishEvents,
  toTimestamp,
  validationFailed,
  type CountSignal,
  type FieldError,
  type Nats,
  type Outbox,
} from "@feeds/kit";
import { UserSchema, UserService, type User } from "@feeds/proto/feeds/identity/v1/identity";
import { revokedBefore, userKey, type UserDoc, type UserRepository } from "./user-repository.js";

export interface UserServiceDeps {
  users: UserRepository;
  /** user.updated: recorded in the upserted record, published after it (batch imports are quiet). */
  outbox: Outbox;
  nats: Nats;
  /** The console's change signal of users (count, version). */
  signal: CountSignal;
  /** Publishes a user's revoked_before to every gateway replica (epoch ms). */
  signalRevocation(tenantId: string, userId: string, revokedBeforeMs: number): Promise<void>;
}

/** `stamp`: the user's revocation stamp (omitted: the field stays unset, as in GetUsers). */
export const userToProto = (d: UserDoc, stamp?: Date): User =>
  create(UserSchema, {
    id: d.id,
    customJson: d.custom_json,
    createdAt: toTimestamp(d.created_at),
    updatedAt: toTimestamp(d.updated_at),
    revokedBefore: stamp && toTimestamp(stamp),
  });

const ID_RULE = "must match ^[A-Za-z0-9_\\-.@]{1,128}$";

function requireId(id: string): void {
  if (!isId(id)) throw validationFailed([{ path: "id", message: ID_RULE }]);
}

/** Checks one user item; answers its field errors (empty when valid). */
function checkUser(id: string, customJson: string, prefix = ""): FieldError[] {
  const errors: FieldError[] = [];
  if (!isId(id)) errors.push({ path: `${prefix}id`, message: ID_RULE });
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
      const customJson = req.customJson || "{}";
      const now = new Date();
      // The event carries the User as the upsert leaves it: created_at is the stored one, read
      // first. It is recorded in the record by the upsert itself, so it exists if and only if
      // the write happened; the relay publishes it should this writer not.
      const [before, rv] = await Promise.all([users.get(tenant, req.id), users.revocations(tenant, [req.id])]);
      const data = {
        id: req.id,
        custom: JSON.parse(customJson) as unknown,
        created_at: (before?.created_at ?? now).toISOString(),
        updated_at: now.toISOString(),
      };
      const event = newEvent("user.updated", tenant, data, { at: now });
      const change = deps.outbox.change(eventMessages(deps.nats, [event]));
      const { doc, created } = await users.upsert(tenant, req.id, customJson, now, deps.outbox.forUpdate(change));
      const stored = doc.created_at.toISOString();
      if (stored === data.created_at) await deps.outbox.settle("users", userKey(tenant, req.id), change);
      else {
        // A racing creator's record: the event says its created_at (the recorded one, the relay's
        // should this publish fail, is a few milliseconds off).
        data.created_at = stored;
        await publishEvents(deps.nats, [event]).then(
          () => deps.outbox.discard("users", userKey(tenant, req.id), change),
          () => undefined,
        );
      }
      await deps.signal.bump(tenant, created ? 1 : 0);
      return { user: userToProto(doc, revokedBefore(doc, rv.get(req.id))), created };
    },

    async getUser(req, ctx) {
      const tenant = requireTenant(ctx);
      const [doc, rv] = await Promise.all([users.get(tenant, req.id), users.revocations(tenant, [req.id])]);
      if (!doc) throw notFound("user not found");
      return { user: userToProto(doc, revokedBefore(doc, rv.get(req.id))) };
    },

    async getUsers(req, ctx) {
      const tenant = requireTenant(ctx);
      const ids = [...new Set(req.ids)].filter(isId);
      if (ids.length === 0) return { users: [] };
      return { users: (await users.getMany(tenant, ids)).map((d) => userToProto(d)) };
    },

    async listUsers(req, ctx) {
      const tenant = requireTenant(ctx);
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      const rows = await users.page(tenant, limit, after ? { created_at: new Date(after[0]), id: after[1] } : null);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const rv = await users.revocations(tenant, page.map((d) => d.id));
      return {
        users: page.map((d) => userToProto(d, revokedBefore(d, rv.get(d.id)))),
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
            const { created } = await users.upsert(tenant, u.id, u.customJson || "{}");
            await deps.signal.bump(tenant, created ? 1 : 0);
            return { index, ok: true, id: u.id, code: "" };
          } catch {
            return { index, ok: false, id: "", code: "INTERNAL" };
          }
        }),
      );
      return { results };
    },

    // Any valid id: a token may name a user that was never upserted (actor_user_unresolved).
    async revokeTokens(req, ctx) {
      const tenant = requireTenant(ctx);
      requireId(req.id);
      const stamp = await users.revoke(tenant, req.id, new Date());
      await deps.signalRevocation(tenant, req.id, stamp.getTime());
      await deps.signal.bump(tenant, 0);
      return { revokedBefore: toTimestamp(stamp) };
    },

    async getUserSignal(_req, ctx) {
      const tenant = requireTenant(ctx);
      const { count, version } = await deps.signal.read(tenant, () => users.count(tenant));
      return { count: BigInt(count), version: BigInt(version) };
    },

    async getRevocation(req, ctx) {
      const tenant = requireTenant(ctx);
      requireId(req.id);
      const [doc, rv] = await Promise.all([users.get(tenant, req.id), users.revocations(tenant, [req.id])]);
      return { revokedBefore: toTimestamp(revokedBefore(doc, rv.get(req.id))) };
    },
  };
}
