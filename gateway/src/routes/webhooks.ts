import { isoOf, notFound } from "@feeds/kit";
import type { WebhookDestination, WebhookEventRecord } from "@feeds/proto/feeds/notification/v1/webhook";
import {
  createdWebhookSchema,
  createWebhookBody,
  isWebhookId,
  testWebhookSchema,
  webhookDestinationPage,
  webhookEventRecordPage,
  webhookIdParams,
  webhookPageQuery,
} from "@feeds/contract";
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
  const tags = ["webhooks"];
  const { webhooks } = clients;

  r.add({
    method: "GET",
    url: "/v1/webhooks",
    auth: "server",
    summary: "List webhook destinations, oldest first (server token; no secrets)",
    tags,
    query: webhookPageQuery,
    response: { 200: webhookDestinationPage },
    async handler({ query, call }) {
      const res = await webhooks.listDestinations({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return { results: res.destinations.map(destinationJson), next: res.next || null };
    },
  });

  r.add({
    method: "POST",
    url: "/v1/webhooks",
    auth: "server",
    status: 201,
    summary: "Register a webhook destination; its whsec_ signing secret is answered only here",
    tags,
    body: createWebhookBody,
    response: { 201: createdWebhookSchema },
    async handler({ body, call }) {
      const res = await webhooks.createDestination({ url: body.url, events: body.events ?? [] }, call);
      return { destination: destinationJson(res.destination), signing_secret: res.signingSecret };
    },
  });

  r.add({
    method: "DELETE",
    url: "/v1/webhooks/:id",
    auth: "server",
    status: 204,
    summary: "Delete a webhook destination: nothing more is delivered to it",
    tags,
    params: webhookIdParams,
    response: { 204: null },
    async handler({ params, call }) {
      if (!isWebhookId(params.id)) throw notFound("webhook destination not found");
      await webhooks.deleteDestination({ id: params.id.toLowerCase() }, call);
      return undefined;
    },
  });

  r.add({
    method: "GET",
    url: "/operator/webhooks/events",
    auth: "member",
    summary: "Published webhook event records, newest first (created_at desc, id desc)",
    tags: ["operator"],
    query: webhookPageQuery,
    response: { 200: webhookEventRecordPage },
    async handler({ query, call }) {
      const res = await webhooks.listEvents({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return { results: res.events.map(recordJson), next: res.next || null };
    },
  });

  r.add({
    method: "GET",
    url: "/operator/webhooks/destinations",
    auth: "member",
    summary: "The tenant's webhook destinations (operator view; no secrets)",
    tags: ["operator"],
    query: webhookPageQuery,
    response: { 200: webhookDestinationPage },
    async handler({ query, call }) {
      const res = await webhooks.listDestinations({ page: { limit: query.limit, cursor: cursorOf(query) } }, call);
      return { results: res.destinations.map(destinationJson), next: res.next || null };
    },
  });

  r.add({
    method: "POST",
    url: "/operator/webhooks/test",
    auth: "member",
    status: 202,
    summary: "Send a webhook.test event to every destination; answers how many it was sent to",
    tags: ["operator"],
    response: { 202: testWebhookSchema },
    async handler({ call }) {
      const res = await webhooks.sendTest({}, call);
      return { published: res.published };
    },
  });
}
