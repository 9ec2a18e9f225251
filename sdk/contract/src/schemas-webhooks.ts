import { z } from "zod";
import { pageQuery } from "./schemas.js";

// Request schemas of the webhook routes (contract sections 2 and 3). Only route schemas and the
// event type list are exported: sibling schema modules share the package's namespace.

/** Every event type of contract section 3. */
export const webhookEventTypes = [
  "activity.added",
  "activity.updated",
  "activity.deleted",
  "follow.created",
  "follow.deleted",
  "reaction.added",
  "reaction.deleted",
  "comment.added",
  "comment.deleted",
  "user.updated",
  "webhook.test",
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/**
 * `POST /v1/webhooks`: an absolute http or https URL (at most 2048 characters; the service
 * refuses private, loopback, link-local, multicast and unspecified hosts unless the deployment
 * allows them) and the event types it wants (omitted: every type; given: at least one).
 */
export const createWebhookBody = z.object({
  url: z.string().min(1).max(2048),
  events: z
    .array(z.enum(webhookEventTypes))
    .min(1, "name at least one event type, or omit events for every type")
    .max(webhookEventTypes.length * 2)
    .optional(),
});
export type CreateWebhookBody = z.infer<typeof createWebhookBody>;

const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** Destination ids are UUIDs: anything else names no destination. */
export const isWebhookId = (id: string): boolean => uuidPattern.test(id);

/** `{id}` of `/v1/webhooks/{id}`. The gateway answers 404 for an id that is not a UUID. */
export const webhookIdParams = z.object({ id: z.string().min(1).max(2048) });

/** Destination lists and the event log: `limit` 1..100 (default 20), `next`, `cursor` (next wins). */
export const webhookPageQuery = pageQuery.extend({ limit: z.coerce.number().int().min(1).max(100).default(20) });
