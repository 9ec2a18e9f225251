import { isoOf } from "@feeds/kit";
import type { Notification, NotificationGroup } from "@feeds/proto/feeds/notification/v1/notification";
import { operations } from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import { customOf } from "../json.js";
import type { Clients } from "@feeds/kit";
import { matchesEtag } from "./feeds.js";
import { notificationGroupsWeight } from "../rate-weights.js";

/** The interface's Notification resource. */
const notificationJson = (n: Notification) => ({
  id: n.id,
  verb: n.verb,
  actor: n.actor,
  object: n.object,
  reaction_kind: n.reactionKind ?? null,
  activity_id: n.activityId ?? null,
  created_at: isoOf(n.createdAt),
  seen_at: isoOf(n.seenAt),
  read_at: isoOf(n.readAt),
  actor_user: n.actorUser ? actorUserJson(n.actorUser) : null,
});

const actorUserJson = (u: { id: string; customJson: string }) => ({ id: u.id, custom: customOf(u.customJson) });

/** The Group resource of the grouped feed (issue 23). */
const groupJson = (g: NotificationGroup) => ({
  group_key: g.groupKey,
  verb: g.verb,
  reaction_kind: g.reactionKind ?? null,
  object: g.object,
  activity_id: g.activityId ?? null,
  activity_count: Number(g.activityCount),
  actor_count: Number(g.actorCount),
  actors: g.actors.map(actorUserJson),
  latest: g.latest.map(notificationJson),
  first_at: isoOf(g.firstAt),
  updated_at: isoOf(g.updatedAt),
  seen_at: isoOf(g.seenAt),
  read_at: isoOf(g.readAt),
});

const groupSelection = (s: true | string[] | undefined): { all?: boolean; groupKeys?: string[] } | undefined =>
  s === undefined ? undefined : s === true ? { all: true } : { groupKeys: s };

const selection = (s: true | string[] | undefined): { all?: boolean; ids?: string[] } | undefined =>
  s === undefined ? undefined : s === true ? { all: true } : { ids: s };

/**
 * The caller's notification feed (server tokens name its `owner`; user tokens may not), its
 * marks and its change signal. The notification service decides who the owner is.
 */
export function notificationRoutes(r: RouteTable, clients: Pick<Clients, "notification">) {

  r.handle(operations.notifications, {
    async handler({ query, call }) {
      const res = await clients.notification.listNotifications(
        { page: { limit: query.limit ?? 20, cursor: cursorOf(query) }, owner: query.owner ?? "" },
        call,
      );
      return {
        results: res.notifications.map(notificationJson),
        next: res.next || null,
        unseen: Number(res.unseen),
        unread: Number(res.unread),
      };
    },
  });

  r.handle(operations.markNotifications, {
    async handler({ body, call }) {
      const res = await clients.notification.markNotifications(
        { seen: selection(body.seen), read: selection(body.read), owner: body.owner ?? "" },
        call,
      );
      return { unseen: Number(res.unseen), unread: Number(res.unread) };
    },
  });

  r.handle(operations.notificationGroups, {
    weight: notificationGroupsWeight,
    async handler({ query, call }) {
      const res = await clients.notification.listNotificationGroups({ page: { limit: query.limit ?? 20, cursor: cursorOf(query) }, owner: query.owner ?? "" }, call);
      return { results: res.groups.map(groupJson), next: res.next || null, unseen: Number(res.unseen), unread: Number(res.unread) };
    },
  });

  r.handle(operations.notificationGroupMembers, {
    async handler({ params, query, call }) {
      const res = await clients.notification.listNotificationGroupMembers(
        { groupKey: params.group_key, page: { limit: query.limit ?? 20, cursor: cursorOf(query) }, owner: query.owner ?? "" },
        call,
      );
      return { results: res.notifications.map(notificationJson), next: res.next || null };
    },
  });

  r.handle(operations.markNotificationGroups, {
    async handler({ body, call }) {
      const res = await clients.notification.markNotificationGroups({ seen: groupSelection(body.seen), read: groupSelection(body.read), owner: body.owner ?? "" }, call);
      return { unseen: Number(res.unseen), unread: Number(res.unread) };
    },
  });

  r.handle(operations.notificationSignal, {
    async handler({ req, reply, query, call }) {
      const res = await clients.notification.getNotificationSignal({ owner: query.owner ?? "" }, call);
      const body = { unseen: Number(res.unseen), unread: Number(res.unread), version: Number(res.version) };
      // The counts are part of the tag: two reads of one version may count an in-flight change apart.
      const etag = `"${body.version}-${body.unseen}-${body.unread}"`;
      reply.header("etag", etag).header("cache-control", "no-cache");
      if (matchesEtag(req.headers["if-none-match"], etag)) {
        reply.code(304);
        return undefined;
      }
      return body;
    },
  });
}
