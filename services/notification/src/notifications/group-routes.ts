import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { decodeCursor, encodeCursor, notFound, pageLimit, requireTenant, toTimestamp, validationFailed } from "@feeds/kit";
import {
  NotificationGroupSchema,
  type GroupSelection,
  type NotificationGroup,
  type NotificationService,
} from "@feeds/proto/feeds/notification/v1/notification";
import type { CountChanges } from "./changes.js";
import { userOf } from "./from-event.js";
import { GROUP_KEY } from "./group-keys.js";
import type { GroupCursor, GroupDoc, GroupRepository } from "./group-repository.js";
import type { NotificationDoc, NotificationRepository, Selection } from "./notification-repository.js";
import { cursorOf, ownerOf, toProto, type ActorUsers } from "./routes.js";

/** Actors and latest members a group shows. */
export const GROUP_SHOWN = 5;
/** Group keys one mark may name, per selection. */
export const MARK_GROUPS_MAX = 100;

export interface GroupServiceDeps {
  notifications: Pick<NotificationRepository, "groupPage" | "latestOf">;
  groups: Pick<GroupRepository, "page" | "get" | "actors" | "actorsOf" | "counts">;
  changes: Pick<CountChanges, "mark">;
  actorUsers: (ctx: HandlerContext, tenantId: string, actors: string[]) => Promise<ActorUsers>;
}

type GroupMethods = Pick<ServiceImpl<typeof NotificationService>, "listNotificationGroups" | "listNotificationGroupMembers" | "markNotificationGroups">;

const groupCursorOf = (cursor: string | undefined): GroupCursor | null => {
  if (!cursor) return null;
  const [ms, key] = decodeCursor(cursor, ["number", "string"] as const);
  if (!GROUP_KEY.test(key)) throw validationFailed([{ path: "next", message: "malformed cursor" }]);
  return { updated_at: new Date(ms), key };
};

function groupKeyParam(key: string): string {
  if (!GROUP_KEY.test(key)) throw validationFailed([{ path: "group_key", message: "must be a group key (32 hex characters)" }]);
  return key;
}

/** A mark's group selection; null when the request makes no such mark. */
function selectionOf(sel: GroupSelection | undefined, path: string): "all" | string[] | null {
  if (!sel) return null;
  if (sel.all) return "all";
  if (sel.groupKeys.length > MARK_GROUPS_MAX) throw validationFailed([{ path, message: `at most ${MARK_GROUPS_MAX} group keys` }]);
  const bad = sel.groupKeys.findIndex((k) => !GROUP_KEY.test(k));
  if (bad >= 0) throw validationFailed([{ path: `${path}.${bad}`, message: "must be a group key (32 hex characters)" }]);
  return [...new Set(sel.groupKeys)];
}

/** The notification service's group RPCs: pages of groups, a group's members, marks by group. */
export function createGroupService(deps: GroupServiceDeps): GroupMethods {
  const { notifications, groups, changes } = deps;

  /**
   * Each group's 5 latest actors and members: one query for all the page's groups of each (the
   * newest 5 per group on the page at most), then one per group that a busier group crowded out.
   */
  async function shownOf(tenantId: string, owner: string, page: GroupDoc[]): Promise<{ actors: string[]; latest: NotificationDoc[] }[]> {
    const keys = page.map((g) => g._id);
    const [members, actors] = await Promise.all([
      notifications.latestOf(tenantId, owner, keys, GROUP_SHOWN * page.length),
      groups.actorsOf(tenantId, keys, GROUP_SHOWN * page.length),
    ]);
    const latestBy = new Map<string, NotificationDoc[]>();
    for (const m of members) if (m.group_key) latestBy.set(m.group_key, [...(latestBy.get(m.group_key) ?? []), m]);
    const actorsBy = new Map<string, string[]>();
    for (const a of actors) actorsBy.set(a.group_key, [...(actorsBy.get(a.group_key) ?? []), a.actor]);
    return Promise.all(
      page.map(async (g) => {
        // Members are stored before their group counts them, actors before too: a count never runs ahead of what exists.
        let latest = latestBy.get(g._id) ?? [];
        if (latest.length < Math.min(GROUP_SHOWN, g.activity_count)) latest = await notifications.groupPage(tenantId, owner, g._id, GROUP_SHOWN, null);
        let who = actorsBy.get(g._id) ?? [];
        if (who.length < Math.min(GROUP_SHOWN, g.actor_count)) who = await groups.actors(tenantId, g._id, GROUP_SHOWN);
        return { actors: who.slice(0, GROUP_SHOWN), latest: latest.slice(0, GROUP_SHOWN) };
      }),
    );
  }

  /** The page's groups as the RPC answers them; `unseen`/`unread`: the owner's groups with such a member. */
  async function toGroups(ctx: HandlerContext, tenantId: string, owner: string, page: GroupDoc[]): Promise<NotificationGroup[]> {
    const shown = await shownOf(tenantId, owner, page);
    const users = await deps.actorUsers(ctx, tenantId, shown.flatMap((s) => [...s.actors, ...s.latest.map((d) => d.actor)]));
    return page.map((g, i) => {
      const { actors, latest } = shown[i] ?? { actors: [], latest: [] as NotificationDoc[] };
      return create(NotificationGroupSchema, {
        groupKey: g._id,
        verb: g.verb,
        reactionKind: g.reaction_kind ?? undefined,
        object: g.object,
        activityId: g.activity_id ?? undefined,
        activityCount: BigInt(g.activity_count),
        actorCount: BigInt(g.actor_count),
        actors: actors.flatMap((a) => {
          const id = userOf(a);
          if (id === null) return [];
          return [{ id, customJson: users.get(id)?.customJson ?? "{}" }];
        }),
        latest: latest.map((d) => toProto(d, users)),
        firstAt: toTimestamp(g.first_at),
        updatedAt: toTimestamp(g.updated_at),
        // A group is unseen (unread) while a member is: its count of such members is above 0.
        seenAt: (g.unseen ?? 0) > 0 ? undefined : toTimestamp(g.seen_at ?? g.updated_at),
        readAt: (g.unread ?? 0) > 0 ? undefined : toTimestamp(g.read_at ?? g.updated_at),
      });
    });
  }

  return {
    async listNotificationGroups(req, ctx) {
      const tenant = requireTenant(ctx);
      const owner = ownerOf(ctx, req.owner);
      const limit = pageLimit(req.page?.limit);
      const rows = await groups.page(tenant, owner, limit, groupCursorOf(req.page?.cursor));
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const counts = await groups.counts(tenant, owner);
      return {
        groups: await toGroups(ctx, tenant, owner, page),
        next: rows.length > limit && last ? encodeCursor([last.updated_at.getTime(), last._id]) : "",
        unseen: BigInt(counts.unseen),
        unread: BigInt(counts.unread),
      };
    },

    async listNotificationGroupMembers(req, ctx) {
      const tenant = requireTenant(ctx);
      const owner = ownerOf(ctx, req.owner);
      const key = groupKeyParam(req.groupKey);
      const limit = pageLimit(req.page?.limit);
      const after = cursorOf(req.page?.cursor);
      // Another owner's group is not found: a key names nothing outside its owner's notifications.
      if (!(await groups.get(tenant, owner, key))) throw notFound("notification group not found");
      const rows = await notifications.groupPage(tenant, owner, key, limit, after);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const users = await deps.actorUsers(ctx, tenant, page.map((d) => d.actor));
      return {
        notifications: page.map((d) => toProto(d, users)),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "",
      };
    },

    async markNotificationGroups(req, ctx) {
      const tenant = requireTenant(ctx);
      const owner = ownerOf(ctx, req.owner);
      const seen = selectionOf(req.seen, "seen");
      const read = selectionOf(req.read, "read");
      if (seen === null && read === null) throw validationFailed([{ path: "", message: "name seen and/or read" }]);
      // The members of the named groups: the mark's filter names the owner, so others' keys match nothing.
      const members = (sel: "all" | string[] | null): Selection | null => (sel === null || sel === "all" ? sel : { groups: sel });
      await changes.mark(tenant, owner, members(seen), members(read));
      const after = await groups.counts(tenant, owner);
      return { unseen: BigInt(after.unseen), unread: BigInt(after.unread) };
    },
  };
}
