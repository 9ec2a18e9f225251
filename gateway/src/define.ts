import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { CallOptions } from "@connectrpc/connect";
import { forbidden, scope, workScope } from "@feeds/kit";
import { successStatus, type AuthKind, type RouteDef, type ParsedInput } from "@feeds/contract";
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

/** How the gateway serves one route of the table: its handler and its rate and admission rules. */
export interface RouteHandler<R extends RouteDef> {
  /** Batch routes: their own rate window and a 5 MiB body limit. */
  batch?: boolean;
  /**
   * How many times a request counts in its rate windows (limits.rateWeights; default 1), from
   * its raw, not yet validated, body and query: read them defensively.
   */
  weight?: number | ((raw: { body: unknown; query: unknown }) => number);
  /**
   * `exempt`: never admitted through the overload guard (health and readiness, which a busy
   * process must still answer). `stream`: a long-lived stream, shed as it arrives while the
   * process is saturated but never counted as a request in flight.
   */
  admission?: "exempt" | "stream";
  /**
   * A credential in place of the Authorization header (the stream's `?ticket=`): the Authorization
   * value to authenticate with, or undefined to use the header. Runs before the input is parsed:
   * it reads the raw query defensively.
   */
  credential?: (req: FastifyRequest) => Promise<string | undefined>;
  /** Answers with the route's success status (successStatus) unless it sets another. */
  handler(ctx: RouteCtx<ParsedInput<R["params"]>, ParsedInput<R["query"]>, ParsedInput<R["body"]>>): Promise<unknown>;
}

/** A route as served: its definition (from @feeds/contract) and its handler. */
export interface ServedRoute {
  readonly def: RouteDef;
  readonly handler: RouteHandler<RouteDef>;
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
  const served = new Map<RouteDef, ServedRoute>();

  async function authorize(def: RouteDef, spec: RouteHandler<RouteDef>, req: FastifyRequest, reply: FastifyReply) {
    const rid = req.id;
    const authz = (await spec.credential?.(req)) ?? req.headers.authorization;
    const onRate = (rate: RateState) => rateHeaders(reply, rate);
    const weight = typeof spec.weight === "function" ? spec.weight({ body: req.body, query: req.query }) : (spec.weight ?? 1);
    const tenantRequest = { windowName: spec.batch ? ("batch" as const) : ("normal" as const), weight, requestId: rid, address: req.ip, onRate };
    switch (def.auth) {
      case "none":
        return { tenant: null, operator: null, call: scope({ requestId: rid }) };
      case "tenant":
      case "server":
      case "user": {
        const t = await deps.tenantAuth.authenticate(authz, tenantRequest);
        noteCorsTenant(req, t.tenant);
        if (def.auth !== "tenant" && t.kind !== def.auth) throw forbidden(`${def.auth} token required`);
        const caller = t.kind === "user" ? { kind: "user" as const, userId: t.userId } : { kind: "server" as const };
        return { tenant: t, operator: null, call: scope({ tenantId: t.tenant.id, caller, requestId: rid }) };
      }
      case "operator":
      case "member":
      case "owner":
      case "staff": {
        if (def.auth === "staff" && isJwtShaped(bearerOf(authz))) {
          // Contract: any caller on /admin but staff gets 403, so a tenant token gets 403 once it
          // verifies (401 if it does not). Operator routes keep 401: it is not an operator session.
          await deps.tenantAuth.authenticate(authz, { ...tenantRequest, weight: 1 });
          throw forbidden("tenant token on an /admin route");
        }
        // Every session token is looked up in identity: each counts against the address's budget.
        await deps.failures.check(req.ip);
        const o = await deps.failures.spend(req.ip, () => authenticateOperator(deps.clients, authz, rid));
        const role = o.operator.role;
        if (def.auth === "staff" && role !== Role.STAFF) throw forbidden("platform staff only");
        if ((def.auth === "member" || def.auth === "owner") && (role === Role.STAFF || !o.operator.tenantId)) {
          throw forbidden("tenant operators only");
        }
        if (def.auth === "owner" && role !== Role.OWNER) throw forbidden("owner only");
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
    /** Every route served so far, by its definition. */
    served,
    /**
     * Serves a route of the table: method, path, auth kind and the schemas of params, query and
     * body come from its definition. A definition served twice is refused.
     */
    handle<R extends RouteDef>(def: R, spec: RouteHandler<R>) {
      if (served.has(def)) throw new Error(`${def.method} ${def.path} is already served`);
      const s = spec as unknown as RouteHandler<RouteDef>;
      served.set(def, { def, handler: s });
      const url = def.path.replace(/\{([A-Za-z_]+)\}/g, ":$1");
      app.route({
        method: def.method,
        url,
        // Under overload, shed as the request arrives: its body and caller cost nothing then.
        ...(s.admission === "exempt"
          ? {}
          : {
              onRequest: (_req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
                if (deps.overload.saturated()) return done(deps.overload.refusal());
                done();
              },
            }),
        bodyLimit: s.batch ? 5 * MiB : MiB,
        // Database commands the request causes are counted under its route (kit metrics).
        handler: (req, reply) => workScope.run({ work: `${def.method} ${url}` }, () => handle(req, reply)),
      });
      const route = `${def.method} ${url}`;
      const tested = latencyTested(url);
      const status = successStatus(def);
      async function handle(req: FastifyRequest, reply: FastifyReply) {
        const auth = await authorize(def, s, req, reply);
        const params = def.params ? parse(def.params, req.params) : (undefined as unknown);
        const query = def.query ? parse(def.query, req.query) : (undefined as unknown);
        const body = def.body ? parse(def.body, req.body) : (undefined as unknown);
        if (await deps.idempotency?.claim(req, reply, auth)) return reply;
        // Admitted only now: the body is read, the caller known and the input valid.
        const release = s.admission === undefined ? await deps.overload.admit(route, tested) : null;
        try {
          reply.code(status);
          const out = await s.handler({ req, reply, params, query, body, ...auth });
          if (out === undefined) return reply.send();
          return out;
        } finally {
          release?.();
        }
      }
    },
    /** Throws naming every route of `table` not served: the gateway serves the whole table. */
    assertServes(table: Readonly<Record<string, RouteDef>>) {
      const missing = Object.entries(table)
        .filter(([, def]) => !served.has(def))
        .map(([id, def]) => `${id} (${def.method} ${def.path})`);
      if (missing.length) throw new Error(`the gateway serves no handler for: ${missing.join(", ")}`);
    },
  };
}

export type RouteTable = ReturnType<typeof createRouteTable>;

/** The `next` of a page request: `next` wins over its deprecated alias `cursor`. */
export const cursorOf = (q: { next?: string | undefined; cursor?: string | undefined }) => q.next ?? q.cursor ?? "";
