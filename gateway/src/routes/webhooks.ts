import { isoOf, notFound } from "@feeds/kit";
import type { WebhookDestination, WebhookEventRecord } from "@feeds/proto/feeds/notification/v1/webhook";
import { isWebhookId, operations } from "@feeds/contract";
import { cursorOf, type RouteTable } from "../define.js";
import type { Clients } from "@feeds/kit";

// Webhook destinations (server tokens) and the operator console's webhook views.

/** A destination as every list shows it: never its signing secret. `events` null: every type. */
const destinationJson = (d: WebhookDestination | undefined) =>
  d && { id: d.id, url: d.url, events: d.events.length ? [...d.events] : null, created_at: isoOf(d.createdAt) };

const recordJson = (r: WebhookEventRecord) => ({
  id: r.id,
  event_id: r.eventId,
  event_type: r.eventType,
  destination_id: r.destinationId,
  status: r.status,
  attempts: r.attempts,
  created_at: isoOf(r.createdAt),
});

export function webhookRoutes(r: RouteTable, clients: Pick<Clients, "webhooks">) {
  const { webhooks } = clients;

  r.handle(operations.listWebhooks, {
    async handler({ query, call }) {
      const res = await webhooks.listDestinations({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return { results: res.destinations.map(destinationJson), next: res.next || null };
    },
  });

  r.handle(operations.createWebhook, {
    async handler({ body, call }) {
      const res = await webhooks.createDestination({ url: body.url, events: body.events ?? [] }, call);
      return { destination: destinationJson(res.destination), signing_secret: res.signingSecret };
    },
  });

  r.handle(operations.deleteWebhook, {
    async handler({ params, call }) {
      if (!isWebhookId(params.id)) throw notFound("webhook destination not found");
      await webhooks.deleteDestination({ id: params.id.toLowerCase() }, call);
      return undefined;
    },
  });

  r.handle(operations.webhookEvents, {
    async handler({ query, call }) {
      const res = await webhooks.listEvents({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return { results: res.events.map(recordJson), next: res.next || null };
    },
  });

  r.handle(operations.webhookDestinations, {
    async handler({ query, call }) {
      const res = await webhooks.listDestinations({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return { results: res.destinations.map(destinationJson), next: res.next || null };
    },
  });

  r.handle(operations.sendTestWebhook, {
    async handler({ call }) {
      const res = await webhooks.sendTest({}, call);
      return { published: res.published };
    },
  });
}
