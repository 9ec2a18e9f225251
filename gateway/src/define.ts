import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { CallOptions } from "@connectrpc/connect";
import { forbidden, scope, workScope } from "@feeds/kit";
import { openApiSchema, type AuthKind, type ResponseSchemas } from "@feeds/contract";
import { Role, type Operator } from "@feeds/proto/feeds/identity/v1/identity";
import { authenticateOperator, bearerOf, isJwtShaped, type TenantAuth, type TenantAuthenticator } from "./auth.js";
import type { AuthFailureBudget } from "./auth-failures.js";
import type { Idempotency } from "./idempotency.js";
import type { OverloadGuard } from "./overload.js";
import type { RateState } from "./rate-limit.js";
import { parse } from "./http.js";
import { noteCorsTenant } from "./cors.js";
import type { Clients } from "@feeds/kit";

/** Who may call a route (the SDK's route table uses the same kinds). */
export type { AuthKind };

export interface RouteCtx<P, Q, B> {
  req: FastifyRequest;
  reply: FastifyReply;
  params: P;
  query: Q;
  body: B;
  /** Call options carrying tenant, caller and request id to the services. */
  call: CallOptions;
  tenant: TenantAuth | null;
  operator: { token: string; operator: Operator } | null;
}

export interface RouteSpec<P = unknown, Q = unknown, B = unknown> {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  url: string;
  auth: AuthKind;
  summary: string;
  tags: string[];
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** Batch routes: their own rate window and a 5 MiB body limit. */
  batch?: boolean;
  /**
   * How many times a request counts in its rate windows (limits.rateWeights; default 1), from
   * its raw, not yet validated, body and query: read them defensively.
   */
  weight?: number | ((raw: { body: unknown; query: unknown }) => number);
  /**
   * `exempt`: never admitted through the overload guard (health and readiness, which a busy
   * process must still answer; long-lived streams, which are not requests in flight).
   */
  admission?: "exempt";
  /** Status of a successful answer (default 200); the handler may still set another. */
  status?: number;
  /**
   * The body of each successful answer, by status (null: no body), from the SDK's response
   * schemas: documented in /openapi.json, not checked at run time.
   */
  response?: ResponseSchemas;
  handler(ctx: RouteCtx<P, Q, B>): Promise<unknown>;
}

export interface RouteDeps {
  /** Operator routes resolve their session through identity. */
  clients: Pick<Clients, "operators">;
  tenantAuth: TenantAuthenticator;
  failures: AuthFailureBudget;
  overload: OverloadGuard;
  /** Writes with an Idempotency-Key: replayed, refused, or run and kept (idempotency.ts). */
  idempotency?: Idempotency;
}

/** The IETF RateLimit header fields of where the caller stands in its window. */
export function rateHeaders(reply: FastifyReply, rate: RateState): void {
  reply.header("ratelimit-limit", String(rate.limit));
  reply.header("ratelimit-remaining", String(rate.remaining));
  reply.header("ratelimit-reset", String(rate.reset));
}

/** Routes slow by design are not latency-tested by the overload guard. */
const latencyTested = (url: string) => url.startsWith("/v1/") && !url.startsWith("/v1/batch/");

const MiB = 1024 * 1024;

export function createRouteTable(app: FastifyInstance, deps: RouteDeps) {
  const specs: RouteSpec<never, never, never>[] = [];

  async function authorize(spec: RouteSpec<unknown, unknown, unknown>, req: FastifyRequest, reply: FastifyReply) {
    const rid = req.id;
    const authz = req.headers.authorization;
    const onRate = (rate: RateState) => rateHeaders(reply, rate);
    const weight = typeof spec.weight === "function" ? spec.weight({ body: req.body, query: req.query }) : (spec.weight ?? 1);
    const tenantRequest = { windowName: spec.batch ? ("batch" as const) : ("normal" as const), weight, requestId: rid, address: req.ip, onRate };
    switch (spec.auth) {
      case "none":
        return { tenant: null, operator: null, call: scope({ requestId: rid }) };
      case "tenant":
      case "server":
      case "user": {
        const t = await deps.tenantAuth.authenticate(authz, tenantRequest);
        noteCorsTenant(req, t.tenant);
        if (spec.auth !== "tenant" && t.kind !== spec.auth) throw forbidden(`${spec.auth} token required`);
        const caller = t.kind === "user" ? { kind: "user" as const, userId: t.userId } : { kind: "server" as const };
        return { tenant: t, operator: null, call: scope({ tenantId: t.tenant.id, caller, requestId: rid }) };
      }
      case "operator":
      case "member":
      case "owner":
      case "staff": {
        if (spec.auth === "staff" && isJwtShaped(bearerOf(authz))) {
          // Contract: any caller on /admin but staff gets 403, so a tenant token gets 403 once it
          // verifies (401 if it does not). Operator routes keep 401: it is not an operator session.
          await deps.tenantAuth.authenticate(authz, { ...tenantRequest, weight: 1 });
          throw forbidden("tenant token on an /admin route");
        }
        // Every session token is looked up in identity: each counts against the address's budget.
        await deps.failures.check(req.ip);
        const o = await deps.failures.spend(req.ip, () => authenticateOperator(deps.clients, authz, rid));
        const role = o.operator.role;
        if (spec.auth === "staff" && role !== Role.STAFF) throw forbidden("platform staff only");
        if ((spec.auth === "member" || spec.auth === "owner") && (role === Role.STAFF || !o.operator.tenantId)) {
          throw forbidden("tenant operators only");
        }
        if (spec.auth === "owner" && role !== Role.OWNER) throw forbidden("owner only");
        const caller = { kind: "operator" as const, operatorId: o.operator.id };
        return {
          tenant: null,
          operator: o,
          call: scope({ tenantId: o.operator.tenantId || undefined, caller, requestId: rid }),
        };
      }
    }
  }

  return {
    specs,
    add<P, Q, B>(spec: RouteSpec<P, Q, B>) {
      specs.push(spec as unknown as RouteSpec<never, never, never>);
      const s = spec as unknown as RouteSpec<unknown, unknown, unknown>;
      app.route({
        method: spec.method,
        url: spec.url,
        // Under overload, shed as the request arrives: its body and caller cost nothing then.
        ...(s.admission === "exempt"
          ? {}
          : {
              onRequest: (_req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
                if (deps.overload.saturated()) return done(deps.overload.refusal());
                done();
              },
            }),
        bodyLimit: spec.batch ? 5 * MiB : MiB,
        // Database commands the request causes are counted under its route (kit metrics).
        handler: (req, reply) => workScope.run({ work: `${spec.method} ${spec.url}` }, () => handle(req, reply)),
      });
      const route = `${spec.method} ${spec.url}`;
      const tested = latencyTested(spec.url);
      async function handle(req: FastifyRequest, reply: FastifyReply) {
        const auth = await authorize(s, req, reply);
        const params = s.params ? parse(s.params, req.params) : (undefined as unknown);
        const query = s.query ? parse(s.query, req.query) : (undefined as unknown);
        const body = s.body ? parse(s.body, req.body) : (undefined as unknown);
        if (await deps.idempotency?.claim(req, reply, auth)) return reply;
        // Admitted only now: the body is read, the caller known and the input valid.
        const release = s.admission === "exempt" ? null : await deps.overload.admit(route, tested);
        try {
          reply.code(spec.status ?? 200);
          const out = await s.handler({ req, reply, params, query, body, ...auth });
          if (out === undefined) return reply.send();
          return out;
        } finally {
          release?.();
        }
      }
    },
  };
}

export type RouteTable = ReturnType<typeof createRouteTable>;

/** The `next` of a page request: `next` wins over its deprecated alias `cursor`. */
export const cursorOf = (q: { next?: string | undefined; cursor?: string | undefined }) => q.next ?? q.cursor ?? "";

const statusText: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  304: "Not Modified (If-None-Match held the current ETag)",
  503: "Not ready",
};

/** The `responses` of an operation: each success status with its body, and the error envelope. */
function responsesOf(s: RouteSpec<never, never, never>) {
  const out: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(s.response ?? { [s.status ?? 200]: undefined })) {
    const description = statusText[Number(status)] ?? "success";
    out[status] = schema ? { description, content: { "application/json": { schema: openApiSchema(schema, "output") } } } : { description };
  }
  out["default"] = { description: "error", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
  return out;
}

/** OpenAPI 3 document of every registered route. */
export function openApiDocument(specs: RouteSpec<never, never, never>[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  // The document declares 3.0: its schemas must be 3.0 Schema Objects (nullable, boolean
  // exclusiveMinimum, no $schema or const), not zod's default JSON Schema 2020-12.
  const schemaOf = (s: z.ZodType | undefined) => (s ? openApiSchema(s, "input") : undefined);
  for (const s of specs) {
    const path = s.url.replace(/:([A-Za-z_]+)/g, "{$1}");
    const parameters: unknown[] = [];
    for (const [where, schema] of [["path", s.params], ["query", s.query]] as const) {
      const js = schemaOf(schema) as { properties?: Record<string, unknown>; required?: string[] } | undefined;
      for (const [name, p] of Object.entries(js?.properties ?? {})) {
        parameters.push({ name, in: where, required: where === "path" || (js?.required ?? []).includes(name), schema: p });
      }
    }
    // x-auth: who may call it (the AuthKind), so the SDK's route table can be checked against it.
    const op: Record<string, unknown> = { summary: s.summary, tags: s.tags, "x-auth": s.auth, parameters, responses: responsesOf(s) };
    if (s.auth !== "none") op.security = [{ bearer: [] }];
    if (s.body) op.requestBody = { required: true, content: { "application/json": { schema: schemaOf(s.body) } } };
    (paths[path] ??= {})[s.method.toLowerCase()] = op;
  }
  return {
    openapi: "3.0.3",
    info: { title: "Feeds API", version },
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: {
        Error: {
          type: "object",
          properties: {
            error: {
              type: "object",
              required: ["code", "message", "requestId"],
              properties: {
                code: { type: "string" },
                message: { type: "string" },
                requestId: { type: "string" },
                fields: { type: "array", items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } } },
              },
            },
          },
        },
      },
    },
  };
}
