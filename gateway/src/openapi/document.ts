import type { z } from "zod";
import type { RouteDef } from "@feeds/contract";
import { answerComponents, examples, requestComponents } from "./components.js";
import { createSchemaRenderer } from "./schemas.js";
import { errorAnswers, errorResponses, errorSchemas, headers, parameters, rateHeaders, ref, securitySchemes } from "./shared.js";

// The OpenAPI 3.0 document of the route table: a pure function of the table, so the committed
// docs/openapi.json, the served /openapi.json and a regeneration in a test are one document.

type Json = Record<string, unknown>;

/** The version of the HTTP API this document describes (info.version). */
export const apiVersion = "1.0.0";
/** The server the committed document names; the served one names the gateway's own base URL. */
export const placeholderServer = "http://localhost:8080";

const tagDescriptions: Record<string, string> = {
  health: "Liveness, readiness and queue depths (no credential).",
  feeds: "Feeds and activities.",
  follows: "The follow graph.",
  engagement: "Reactions, comments and replies.",
  moderation: "The tenant's comment blocklist.",
  notifications: "A user's notification feed.",
  stream: "The live stream: activities of watched feeds and the caller's notifications as Server-Sent Events, resumable after any event (docs/stream.md).",
  objects: "Objects that activities refer to.",
  promoted: "Promoted activities.",
  users: "End users of a tenant.",
  webhooks: "Webhook destinations.",
  batch: "Batch imports (5 MiB bodies, their own rate window).",
  operator: "The operator console: a tenant's owners and members.",
  admin: "Platform administration: staff only.",
};

const statusText: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  304: "Not Modified (If-None-Match held the current ETag)",
  503: "Not ready",
};

const writes: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const tenantAuth: ReadonlySet<string> = new Set(["tenant", "server", "user"]);
const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);

function securityOf(def: RouteDef): Json[] {
  switch (def.auth) {
    case "none":
      return [];
    case "tenant":
      return [{ serverToken: [] }, { userToken: [] }];
    case "server":
      return [{ serverToken: [] }];
    case "user":
      return [{ userToken: [] }];
    case "operator":
    case "member":
    case "owner":
    case "staff":
      return [{ operatorSession: [] }];
  }
}

/** The error statuses a route can answer: from its auth kind, its input and its verb. */
export function errorStatusesOf(def: RouteDef): number[] {
  const write = writes.has(def.method);
  const codes = new Set(def.errors ?? []);
  const out: number[] = [];
  if (def.params || def.query || def.body || write) out.push(400);
  if (def.auth !== "none" || codes.has("UNAUTHENTICATED")) out.push(401);
  if (!["none", "operator"].includes(def.auth) || codes.has("FORBIDDEN")) out.push(403);
  if (def.params || codes.has("NOT_FOUND")) out.push(404);
  if (write || codes.has("CONFLICT")) out.push(409);
  if (codes.has("CONTENT_REJECTED")) out.push(422);
  // Health routes are never shed nor rate-limited: a busy process must still answer them.
  if (!def.tags.includes("health")) out.push(429);
  out.push(500);
  return out;
}

/** The OpenAPI document of `table` (operationId → route). */
export function openApiDocument(table: Readonly<Record<string, RouteDef>>, options: { serverUrl: string }) {
  const schemas: Record<string, Json> = {};
  const answers = createSchemaRenderer("output", answerComponents, schemas);
  const requests = createSchemaRenderer("input", requestComponents, schemas);
  const tags = new Set<string>();
  const paths: Record<string, Record<string, Json>> = {};

  for (const [operationId, def] of Object.entries(table)) {
    const write = writes.has(def.method);
    const etag = 304 in def.responses;
    const parameters: Json[] = [ref("parameters", "RequestId")];
    if (write) parameters.push(ref("parameters", "IdempotencyKey"));
    if (etag) parameters.push(ref("parameters", "IfNoneMatch"));
    for (const [where, schema] of [["path", def.params], ["query", def.query]] as const) {
      if (!schema) continue;
      const js = requests.render(schema) as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, p] of Object.entries(js.properties ?? {})) {
        const { description, ...rest } = p;
        const param: Json = { name, in: where, required: where === "path" || (js.required ?? []).includes(name), schema: rest };
        if (typeof description === "string") param.description = description;
        parameters.push(param);
      }
    }

    const responses: Json = {};
    for (const [status, schema] of Object.entries(def.responses) as [string, z.ZodType | null][]) {
      const h: Json = { "X-Request-Id": ref("headers", "RequestId") };
      if (etag && status === "200") h.ETag = ref("headers", "ETag");
      if (tenantAuth.has(def.auth)) Object.assign(h, rateHeaders);
      if (write && Number(status) < 300) h["Idempotent-Replayed"] = ref("headers", "IdempotentReplayed");
      const answer: Json = { description: statusText[Number(status)] ?? "Success", headers: h };
      if (schema) answer.content = { [Number(status) < 300 ? (def.contentType ?? "application/json") : "application/json"]: { schema: answers.render(schema) } };
      responses[status] = answer;
    }
    for (const status of errorStatusesOf(def)) {
      const e = errorAnswers[status];
      if (e) responses[String(status)] = ref("responses", e.name);
    }

    const op: Json = { operationId, summary: def.summary, tags: [...def.tags], "x-auth": def.auth, security: securityOf(def), parameters };
    if (def.body) {
      requests.add(`${pascal(operationId)}Request`, def.body);
      op.requestBody = { required: true, content: { "application/json": { schema: requests.render(def.body) } } };
    }
    op.responses = responses;
    for (const t of def.tags) tags.add(t);
    const path = (paths[def.path] ??= {});
    const method = def.method.toLowerCase();
    if (path[method]) throw new Error(`${def.method} ${def.path} is in the table twice`);
    path[method] = op;
  }

  for (const [name, example] of Object.entries(examples)) {
    const schema = schemas[name];
    if (!schema) throw new Error(`example for ${name}, which is not a component`);
    schema.example = example;
  }
  const missing = [...tags].filter((t) => !tagDescriptions[t]);
  if (missing.length) throw new Error(`tags without a description: ${missing.join(", ")}`);

  return {
    openapi: "3.0.3",
    info: {
      title: "Feeds API",
      version: apiVersion,
      description:
        "Multi-tenant activity feeds: feeds and activities, follows, reactions, comments, notifications, objects, webhooks, and the operator console. Errors answer the envelope {error: {code, message, requestId, fields?}}.",
      license: { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" },
    },
    servers: [{ url: options.serverUrl }],
    tags: Object.keys(tagDescriptions)
      .filter((t) => tags.has(t))
      .map((name) => ({ name, description: tagDescriptions[name] })),
    paths,
    components: {
      securitySchemes,
      parameters,
      headers,
      responses: errorResponses(),
      schemas: { ...errorSchemas, ...sortedByName(schemas) },
    },
  };
}

const sortedByName = (o: Record<string, Json>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));

export type OpenApiDocument = ReturnType<typeof openApiDocument>;
