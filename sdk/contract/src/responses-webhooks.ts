import { z } from "zod";
import { isoDateTime, pageOf, uuidString } from "./responses.js";
import { webhookEventTypes } from "./schemas-webhooks.js";

// Response schemas of the webhook routes, and the body of a delivery (contract sections 2 and 3).

const eventType = z.enum(webhookEventTypes);

/** A destination as every list shows it: never its signing secret. */
export const webhookDestinationSchema = z.object({
  id: uuidString,
  url: z.string(),
  events: z.array(eventType).nullable().describe("the event types it wants; null: every type"),
  created_at: isoDateTime,
});
export const webhookDestinationPage = pageOf(webhookDestinationSchema);
export const createdWebhookSchema = z.object({
  destination: webhookDestinationSchema,
  signing_secret: z.string().describe("whsec_…, answered only here"),
});

/** The operator's event log: one record per event and destination. */
export const webhookEventRecordSchema = z.object({
  id: uuidString,
  event_id: z.string(),
  event_type: eventType,
  destination_id: uuidString,
  status: z.enum(["pending", "published", "failed"]).describe("pending until an attempt is answered 2xx (published) or given up (failed)"),
  attempts: z.number().int().min(0),
  created_at: isoDateTime,
});
export const webhookEventRecordPage = pageOf(webhookEventRecordSchema);
export const testWebhookSchema = z.object({ published: z.number().int().min(0).describe("destinations the test event was sent to") });

/** The body of a delivery (Standard Webhooks): `data` is the Activity for `activity.*` events. */
export const webhookEventSchema = z.object({
  id: z.string(),
  type: eventType,
  created_at: isoDateTime,
  tenant_id: z.string(),
  data: z.unknown(),
});
