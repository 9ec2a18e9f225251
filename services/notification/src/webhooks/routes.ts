import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  callerOf,
  decodeCursor,
  encodeCursor,
  forbidden,
  isEventType,
  newEvent,
  notFound,
  pageLimit,
  publishEvents,
  requireServer,
  requireTenant,
  toTimestamp,
  validationFailed,
  type FieldError,
  type Nats,
} from "@feeds/kit";
import {
  WebhookDestinationSchema,
  WebhookEventRecordSchema,
  WebhookService,
} from "@feeds/proto/feeds/notification/v1/webhook";
import type { DestinationDoc, DestinationRepository, NewDestination } from "./destination-repository.js";
import type { RecordDoc, RecordRepository } from "./record-repository.js";
import { newSigningSecret } from "./signing.js";
import { checkDestinationUrl, type Resolve } from "./url-policy.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const destinationToProto = (d: Pick<DestinationDoc, "_id" | "url" | "events" | "created_at">) =>
  create(WebhookDestinationSchema, { id: d._id, url: d.url, events: d.events, createdAt: toTimestamp(d.created_at) });

const recordToProto = (r: RecordDoc) =>
  create(WebhookEventRecordSchema, {
    id: r._id,
    eventId: r.event_id,
    eventType: r.event_type,
    destinationId: r.destination_id,
    status: r.status,
    attempts: r.attempts,
    createdAt: toTimestamp(r.created_at),
  });

/** Operator console reads (and our own processes); end-user tokens never. */
function requireConsole(ctx: HandlerContext): string {
  const tenant = requireTenant(ctx);
  const kind = callerOf(ctx).kind;
  if (kind !== "operator" && kind !== "system") throw forbidden("operator session required");
  return tenant;
}

/** Destination lists: the tenant's server, or its operators (the console view). */
function requireServerOrConsole(ctx: HandlerContext): string {
  const kind = callerOf(ctx).kind;
  return kind === "operator" ? requireConsole(ctx) : requireServer(ctx);
}

function checkEvents(events: string[]): string[] {
  const errors: FieldError[] = [];
  events.forEach((e, i) => {
    if (!isEventType(e)) errors.push({ path: `events.${i}`, message: "must be an event type of contract section 3" });
  });
  if (errors.length) throw validationFailed(errors);
  return [...new Set(events)];
}

const keyset = (cursor: string | undefined) => {
  const after = cursor ? decodeCursor(cursor, ["number", "string"] as const) : null;
  return after ? { created_at: new Date(after[0]), id: after[1] } : null;
};

export function createWebhookService(deps: {
  destinations: DestinationRepository;
  records: RecordRepository;
  nats: Nats;
  allowPrivate: boolean;
  resolve?: Resolve;
}): ServiceImpl<typeof WebhookService> {
  const { destinations, records } = deps;
  return {
    async listDestinations(req, ctx) {
      const tenantId = requireServerOrConsole(ctx);
      const limit = pageLimit(req.page?.limit);
      const rows = await destinations.page(tenantId, limit, keyset(req.page?.cursor));
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        destinations: page.map(destinationToProto),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "",
      };
    },

    async createDestination(req, ctx) {
      const tenantId = requireServer(ctx);
      const events = checkEvents(req.events);
      const url = await checkDestinationUrl(req.url, { allowPrivate: deps.allowPrivate, resolve: deps.resolve });
      const secret = newSigningSecret();
      const doc: NewDestination = { _id: randomUUID(), tenant_id: tenantId, url, events, secret, created_at: new Date() };
      await destinations.create(doc);
      return { destination: destinationToProto(doc), signingSecret: secret };
    },

    async deleteDestination(req, ctx) {
      const tenantId = requireServer(ctx);
      if (!UUID.test(req.id) || !(await destinations.remove(tenantId, req.id))) throw notFound("webhook destination not found");
      return {};
    },

    async listEvents(req, ctx) {
      const tenantId = requireConsole(ctx);
      const limit = pageLimit(req.page?.limit);
      const rows = await records.page(tenantId, limit, keyset(req.page?.cursor));
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        events: page.map(recordToProto),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "",
      };
    },

    async sendTest(_req, ctx) {
      const tenantId = requireConsole(ctx);
      // Through the notify queue like every event: one message, recorded and delivered by the
      // workers. The count is of the destinations now; one registered or deleted meanwhile
      // changes what the worker finds.
      const published = await destinations.count(tenantId);
      if (published === 0) return { published: 0 };
      const event = newEvent("webhook.test", tenantId, { message: "A test event sent from the operator console." });
      await publishEvents(deps.nats, [event]);
      return { published };
    },

    async getEventSignal(_req, ctx) {
      const tenantId = requireConsole(ctx);
      const s = await records.signal(tenantId);
      return { count: BigInt(s.count), version: BigInt(s.version) };
    },
  };
}
