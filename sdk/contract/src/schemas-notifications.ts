import { z } from "zod";
import { idString, pageQuery } from "./schemas.js";

// Request schemas of the notification routes: the feed, marks and the change signal. `owner` is
// for server tokens (required there); user tokens that send it get 403.

const notificationId = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, "must be a notification id (uuid)");

/** `GET /v1/notifications`: limit 1..100 (default 20), next/cursor, owner (server tokens). */
export const notificationPageQuery = pageQuery.extend({ owner: idString.optional() });
export type NotificationPageQuery = z.infer<typeof notificationPageQuery>;

/** `GET /v1/notifications/signal` */
export const notificationSignalQuery = z.object({ owner: idString.optional() });

/** `true`: every notification of the owner; or up to 100 ids (others' and unknown ones are ignored). */
const markSelection = z.union([z.literal(true), z.array(notificationId).max(100, "at most 100 ids")]);

/** `POST /v1/notifications/mark`: seen and/or read (read implies seen). */
export const markNotificationsBody = z
  .object({ seen: markSelection.optional(), read: markSelection.optional(), owner: idString.optional() })
  .refine((b) => b.seen !== undefined || b.read !== undefined, { message: "name seen and/or read" });
export type MarkNotificationsBody = z.infer<typeof markNotificationsBody>;

// Notification groups (issue 23): follows of one feed, reactions of one kind on one activity,
// comments on one activity, replies to one comment, each collecting for 24 hours.

/** A group key: 32 lower-case hex characters. */
export const groupKeyString = z.string().regex(/^[0-9a-f]{32}$/, "must be a group key (32 hex characters)");

/** `GET /v1/notifications/groups`: limit 1..100 (default 20), next, owner (server tokens). */
export const notificationGroupPageQuery = pageQuery.extend({ owner: idString.optional() });

/** `GET /v1/notifications/groups/{group_key}/members` */
export const notificationGroupParams = z.object({ group_key: groupKeyString });
export const notificationGroupMembersQuery = pageQuery.extend({ owner: idString.optional() });

/** `true`: every group of the owner; or up to 100 group keys (others' and unknown ones are ignored). */
const groupSelection = z.union([z.literal(true), z.array(groupKeyString).max(100, "at most 100 group keys")]);

/** `POST /v1/notifications/groups/mark`: seen and/or read (read implies seen), of the groups' members. */
export const markNotificationGroupsBody = z
  .object({ seen: groupSelection.optional(), read: groupSelection.optional(), owner: idString.optional() })
  .refine((b) => b.seen !== undefined || b.read !== undefined, { message: "name seen and/or read" });
export type MarkNotificationGroupsBody = z.infer<typeof markNotificationGroupsBody>;
