import { publishOptions, uuidFrom, type FeedEvent, type Nats } from "@feeds/kit";
import type { DestinationRepository, Route } from "./destination-repository.js";
import type { RecordRepository } from "./record-repository.js";

// The notify worker's webhook handler: for each event, one delivery task per destination that
// wants it, on the `webhooks` queue; the event is acknowledged once they are all stored there.
// The task carries everything its record holds, and the delivery worker writes that record
// (one write per delivery, batched). Record ids and task message ids derive from the event and
// the destination: JetStream drops a task published again within its duplicate window, and an
// event redelivered later re-queues only the deliveries not yet published or given up. A tenant
// without destinations gets no task and so no record.

/** The webhook body (contract section 3); `meta` is routing, never sent. */
export type PublicEvent = Pick<FeedEvent, "id" | "type" | "created_at" | "tenant_id" | "data">;

export interface DeliveryTask {
  /** record id */
  r: string;
  /** tenant id */
  t: string;
  /** destination id */
  d: string;
  /** When the event was routed (epoch ms): the record's created_at. */
  at: number;
  e: PublicEvent;
}

export const DELIVERY_SUBJECT = "delivery";

/** The filter applies to what the system produces; a test event goes to every destination. */
export const wants = (route: Route, type: string): boolean =>
  type === "webhook.test" || route.events.length === 0 || route.events.includes(type);

export const recordIdOf = (eventId: string, destinationId: string) => uuidFrom("webhook-record", eventId, destinationId);

export function createWebhookPublisher(deps: { nats: Nats; destinations: DestinationRepository; records: Pick<RecordRepository, "settled"> }) {
  const subject = deps.nats.subject("webhooks", DELIVERY_SUBJECT);
  const encoder = new TextEncoder();

  return async function publishToDestinations(event: FeedEvent, opts: { redelivered?: boolean } = {}): Promise<void> {
    const routes = (await deps.destinations.routes(event.tenant_id)).filter((r) => wants(r, event.type));
    if (routes.length === 0) return;
    let ids = routes.map((r) => ({ record: recordIdOf(event.id, r.id), destination: r.id }));
    if (opts.redelivered) {
      const settled = await deps.records.settled(event.tenant_id, ids.map((i) => i.record));
      ids = ids.filter((i) => !settled.has(i.record));
    }
    const at = Date.now();
    const e: PublicEvent = { id: event.id, type: event.type, created_at: event.created_at, tenant_id: event.tenant_id, data: event.data };
    await Promise.all(
      ids.map(({ record, destination }) => {
        const task: DeliveryTask = { r: record, t: event.tenant_id, d: destination, at, e };
        return deps.nats.js.publish(subject, encoder.encode(JSON.stringify(task)), publishOptions(`wh:${record}`));
      }),
    );
  };
}
