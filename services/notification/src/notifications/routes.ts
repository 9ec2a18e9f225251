import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  callerOf,
  decodeCursor,
  encodeCursor,
  forbidden,
  isId,
  pageLimit,
  requestIdKey,
  requireTenant,
  scope,
  toTimestamp,
  validationFailed,
  type Clients,
} from "@feeds/kit";
import {
  NotificationSchema,
  NotificationService,
  type MarkSelection,
  type Notification,
} from "@feeds/proto/feeds/notification/v1/notification";
import { userOf } from "./from-event.js";
import { createGroupService, type GroupServiceDeps } from "./group-routes.js";
import { countsForPage, type CountChanges } from "./changes.js";
import type { CountsRepository } from "./counts.js";
import type { NotificationCursor, NotificationDoc, NotificationRepository, Selection } from "./notification-repository.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids one mark may name, per selection. */
export const MARK_IDS_MAX = 100;

/** Users by id, as `GetUsers` answers them. */
export type ActorUsers = Map<string, { id: string; customJson: string }>;

export interface NotificationServiceDeps {
  notifications: Pick<NotificationRepository, "page"> & GroupServiceDeps["notifications"];
  counts: Pick<CountsRepository, "get" | "read">;
  changes: Pick<CountChanges, "mark">;
  groups: GroupServiceDeps["groups"];
  /** Identity, for actor_user: one getUsers call per page. */
  peers: () => Pick<Clients, "users">;
}

/**
 * Whose notifications a call is about: a user token's own user; a server token (or one of our
 * processes) names it in `owner`. A user token naming an owner is refused, even its own id.
 */
export function ownerOf(ctx: HandlerContext, given: string): string {
  const caller = callerOf(ctx);
  if (caller.kind === "user") {
    if (given) throw forbidden("owner is for server tokens only");
    return caller.userId;
  }
  if (caller.kind !== "server" && caller.kind !== "system") throw forbidden("tenant tokens only");
  if (!given) throw validationFailed([{ path: "owner", message: "required for server tokens" }]);
  if (!isId(given)) throw validationFailed([{ path: "owner", message: "must match ^[A-Za-z0-9_\\-.@]{1,128}$" }]);
  return given;
}

/** A mark's selection as the repository takes it; null when the request makes no such mark. */
function selectionOf(sel: MarkSelection | undefined, path: string): Selection | null {
  if (!sel) return null;
  if (sel.all) return "all";
  if (sel.ids.length > MARK_IDS_MAX) throw validationFailed([{ path, message: `at most ${MARK_IDS_MAX} ids` }]);
  const bad = sel.ids.findIndex((id) => !UUID.test(id));
  if (bad >= 0) throw validationFailed([{ path: `${path}.${bad}`, message: "must be a notification id (uuid)" }]);
  return [...new Set(sel.ids.map((id) => id.toLowerCase()))];
}

export const cursorOf = (cursor: string | undefined): NotificationCursor | null => {
  if (!cursor) return null;
  const [ms, id] = decodeCursor(cursor, ["number", "string"] as const);
  return { created_at: new Date(ms), id };
};

export function toProto(d: NotificationDoc, users: ActorUsers): Notification {
  const uid = userOf(d.actor);
  const user = uid === null ? undefined : users.get(uid);
  return create(NotificationSchema, {
    id: d._id,
    verb: d.verb,
    actor: d.actor,
    object: d.object,
    reactionKind: d.reaction_kind ?? undefined,
    activityId: d.activity_id ?? undefined,
    createdAt: toTimestamp(d.created_at),
    seenAt: d.seen_at ? toTimestamp(d.seen_at) : undefined,
    readAt: d.read_at ? toTimestamp(d.read_at) : undefined,
    actorUser: user ? { id: user.id, customJson: user.customJson } : undefined,
  });
}

/** The users behind `user:` actors, in one call (none when there are none). */
async function actorUsersOf(peers: () => Pick<Clients, "users">, ctx: HandlerContext, tenantId: string, actors: string[]): Promise<ActorUsers> {
  const ids = [...new Set(actors.map((a) => userOf(a)).filter((id): id is string => id !== null))];
  if (ids.length === 0) return new Map<string, { id: string; customJson: string }>();
  const call = scope({ tenantId, caller: { kind: "system" }, requestId: ctx.values.get(requestIdKey) });
  const res = await peers().users.getUsers({ ids }, call);
  return new Map(res.users.map((u) => [u.id, u]));
}

export function createNotificationService(deps: NotificationServiceDeps): ServiceImpl<typeof NotificationService> {
  const { notifications, counts, changes, groups, peers } = deps;

  const actorUsers = (ctx: HandlerContext, tenantId: string, docs: NotificationDoc[]) => actorUsersOf(peers, ctx, tenantId, docs.map((d) => d.actor));

  return {
    ...createGroupService({ notifications, groups, changes, actorUsers: (ctx, tenantId, actors) => actorUsersOf(peers, ctx, tenantId, actors) }),
    async listNotifications(req, ctx) {
      const tenant = requireTenant(ctx);
      const owner = ownerOf(ctx, req.owner);
      const limit = pageLimit(req.page?.limit);
      const after = cursorOf(req.page?.cursor);
      const rows = await notifications.page(tenant, owner, limit, after);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      // The counts after the page: they count at least every notification the page shows. From
      // the signal (Redis) when no notification of the page waits for its count, else from the
      // document, with the +1s it has not taken yet.
      const waiting = page.some((d) => (d.outbox ?? []).length > 0);
      const [shown, users] = await Promise.all([
        waiting ? counts.get(tenant, owner).then((kept) => countsForPage(kept, page)) : counts.read(tenant, owner),
        actorUsers(ctx, tenant, page),
      ]);
      return {
        notifications: page.map((d) => toProto(d, users)),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "",
        unseen: BigInt(shown.unseen),
        unread: BigInt(shown.unread),
      };
    },

    async markNotifications(req, ctx) {
      const tenant = requireTenant(ctx);
      const owner = ownerOf(ctx, req.owner);
      const seen = selectionOf(req.seen, "seen");
      const read = selectionOf(req.read, "read");
      if (seen === null && read === null) throw validationFailed([{ path: "", message: "name seen and/or read" }]);
      const after = await changes.mark(tenant, owner, seen, read);
      return { unseen: BigInt(after.unseen), unread: BigInt(after.unread) };
    },

    async getNotificationSignal(req, ctx) {
      const tenant = requireTenant(ctx);
      const owner = ownerOf(ctx, req.owner);
      const s = await counts.read(tenant, owner);
      return { unseen: BigInt(s.unseen), unread: BigInt(s.unread), version: BigInt(s.version) };
    },
  };
}
