import { randomUUID } from "node:crypto";
import { publishOptions, type Nats } from "./nats.js";
import { webhookEventTypes } from "@feeds/contract";

// The system's events (contract section 3). Producers record them with their write through the
// outbox (outbox.ts) and publish them to the `notify` work queue; the notification service's worker turns
// them into notifications and webhook deliveries.

/** Every event type of contract section 3: the SDK's list, which the webhook routes validate with. */
export const EVENT_TYPES = webhookEventTypes;
export type EventType = (typeof EVENT_TYPES)[number];
export const isEventType = (s: string): s is EventType => (EVENT_TYPES as readonly string[]).includes(s);

export interface FeedEvent {
  /** uuid: the webhook-id of every delivery of this event, and its JetStream message id. */
  id: string;
  type: EventType;
  tenant_id: string;
  /** ISO 8601: the time of the act (notifications take it as their created_at). */
  created_at: string;
  /** The public payload: the `data` of the webhook body (the Activity for activity.*). */
  data: Record<string, unknown>;
  /** Facts for routing that are not part of the public payload (e.g. whom to notify). */
  meta?: Record<string, string>;
}

export function newEvent(
  type: EventType,
  tenantId: string,
  data: Record<string, unknown>,
  opts: { at?: Date; meta?: Record<string, string>; id?: string } = {},
): FeedEvent {
  return {
    id: opts.id ?? randomUUID(),
    type,
    tenant_id: tenantId,
    created_at: (opts.at ?? new Date()).toISOString(),
    data,
    ...(opts.meta ? { meta: opts.meta } : {}),
  };
}

/** The subject every event travels on: the `notify` work queue. */
export const eventSubject = (nats: Nats) => nats.subject("notify", "event");

/** Publishes events; JetStream drops a repeat of an id within its duplicate window. */
export async function publishEvents(nats: Nats, events: readonly FeedEvent[]): Promise<void> {
  const subject = eventSubject(nats);
  for (const e of events) {
    await nats.js.publish(subject, new TextEncoder().encode(JSON.stringify(e)), publishOptions(`ev:${e.id}`));
  }
}

export const decodeEvent = (data: Uint8Array): FeedEvent => JSON.parse(new TextDecoder().decode(data)) as FeedEvent;
