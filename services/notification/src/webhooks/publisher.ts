import { uuidFrom, type FeedEvent, type Nats } from "@feeds/kit";
import type { DestinationRepository, Route } from "./destination-repository.js";
import type { RecordDoc, RecordRepository } from "./record-repository.js";

// The notify worker's webhook handler: for each event, one record and one delivery task per
// destination that wants it. Record ids and task message ids derive from the event and the
// destination, so a redelivered event creates nothing twice and re-queues only what is still
// undelivered. A tenant without destinations records nothing.

/** The webhook body (contract section 3); `meta` is routing, never sent. */
export type PublicEvent = Pick<FeedEvent, "id" | "type" | "created_at" | "tenant_id" | "data">;

export interface DeliveryTask {
  /** record id */
  r: string;
  /** tenant id */
  t: string;
  /** destination id */
  d: string;
  e: PublicEvent;
}

export const DELIVERY_SUBJECT = "delivery";

/** The filter applies to what the system produces; a test event goes to every destination. */
export const wants = (route: Route, type: string): boolean =>
  type === "webhook.test" || route.events.length === 0 || route.events.includes(type);

export function createWebhookPublisher(deps: { nats: Nats; destinations: DestinationRepository; records: RecordRepository }) {
  const subject = deps.nats.subject("webhooks", DELIVERY_SUBJECT);
  const encoder = new TextEncoder();

  return async function publishToDestinations(event: FeedEvent): Promise<void> {
    const routes = (await deps.destinations.routes(event.tenant_id)).filter((r) => wants(r, event.type));
    if (routes.length === 0) return;
    const now = new Date();
    const docs: RecordDoc[] = routes.map((r) => ({
      _id: uuidFrom("webhook-record", event.id, r.id),
      tenant_id: event.tenant_id,
      event_id: event.id,
      event_type: event.type,
      destination_id: r.id,
      status: "pending",
      attempts: 0,
      created_at: now,
      updated_at: now,
    }));
    const pending = await deps.records.create(event.tenant_id, docs);
    const e: PublicEvent = { id: event.id, type: event.type, created_at: event.created_at, tenant_id: event.tenant_id, data: event.data };
    await Promise.all(
      pending.map((rec) => {
        const task: DeliveryTask = { r: rec._id, t: rec.tenant_id, d: rec.destination_id, e };
        return deps.nats.js.publish(subject, encoder.encode(JSON.stringify(task)), { msgID: `wh:${rec._id}` });
      }),
    );
  };
}
