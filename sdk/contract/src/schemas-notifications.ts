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
