import { create } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type CallOptions,
  type HandlerContext,
  type Interceptor,
  type StreamRequest,
  type UnaryRequest,
} from "@connectrpc/connect";
import { ErrorDetailSchema } from "@feeds/proto/feeds/common/v1/common";
import { Health } from "@feeds/proto/grpc/health/v1/health";
import { forbidden, toConnectError, unauthenticated } from "./errors.js";
import { callRuleOf } from "./call-policy.js";
import type { Signer } from "./config.js";
import { INTERNAL_AUTH_HEADER, type Caller, type InternalAuth } from "./internal-auth.js";
import type { Logger } from "./log.js";
import { currentWork, workScope } from "./metrics.js";
import { createRpcTimer } from "./rpc-metrics.js";
import { endSpan, injectTrace, SpanKind, startSpan, tracingOn } from "./tracing.js";

export const tenantKey = createContextKey<string | undefined>(undefined, { description: "tenant id" });
// No default caller: a handler reading the caller of a call that has no verified one fails.
export const callerKey = createContextKey<Caller | undefined>(undefined, { description: "caller" });
export const requestIdKey = createContextKey<string>("", { description: "request id" });

// Only for logs, so a plain header; still hostile: anything but a short plain id is dropped
// (the gateway's form of an X-Request-Id, gateway/src/http.ts).
const H_REQUEST = "feeds-request-id";
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface CallScope {
  tenantId?: string | undefined;
  caller?: Caller;
  requestId?: string;
}

/** Call options naming the tenant, caller and request id; the client interceptor signs them. */
export function scope(s: CallScope): CallOptions {
  const contextValues = createContextValues();
  if (s.tenantId) contextValues.set(tenantKey, s.tenantId);
  if (s.caller) contextValues.set(callerKey, s.caller);
  if (s.requestId) contextValues.set(requestIdKey, s.requestId);
  return { contextValues };
}

/** Handlers: the tenant of this call; a call without one is refused (tenant scope is structural). */
export function requireTenant(ctx: HandlerContext): string {
  const t = ctx.values.get(tenantKey);
  if (!t) throw unauthenticated("tenant required");
  return t;
}

export function callerOf(ctx: HandlerContext): Caller {
  const c = ctx.values.get(callerKey);
  if (!c) throw unauthenticated("caller required");
  return c;
}

/** Server-only work: the tenant's server or one of our processes; every other caller is refused. */
export function requireServer(ctx: HandlerContext): string {
  const tenant = requireTenant(ctx);
  const kind = callerOf(ctx).kind;
  if (kind !== "server" && kind !== "system") throw forbidden("server token required");
  return tenant;
}

export function requireOperator(ctx: HandlerContext): string {
  const c = callerOf(ctx);
  if (c.kind !== "operator") throw forbidden();
  return c.operatorId;
}

/**
 * Client side of every transport: signs the call as `signer`, for its method, with its tenant
 * and caller (none named: anonymous). grpc.health.v1 goes unsigned: it is open to probes.
 */
export function createClientInterceptor(auth: InternalAuth, signer: Signer): Interceptor {
  return (next) => (req) => {
    const v = req.contextValues;
    const rule = callRuleOf(req.method);
    if (rule) req.header.set(INTERNAL_AUTH_HEADER, auth.sign(signer, rule, { tenantId: v.get(tenantKey), caller: v.get(callerKey) ?? { kind: "anonymous" } }));
    const rid = v.get(requestIdKey);
    if (rid) req.header.set(H_REQUEST, rid);
    if (!tracingOn()) return next(req);
    // A client span per call (in-process calls too); its context travels as `traceparent`.
    return startSpan(`${req.method.parent.typeName}/${req.method.name}`, { kind: SpanKind.CLIENT, attributes: rpcAttributes(req) }, async (span) => {
      injectTrace(req.header);
      try {
        const res = await next(req);
        if (!res.stream) endSpan(span);
        return res.stream ? { ...res, message: endWithStream(res.message, span) } : res;
      } catch (err) {
        endSpan(span, err);
        throw err;
      }
    });
  };
}

const rpcAttributes = (req: UnaryRequest | StreamRequest) => ({
  "rpc.system": "connect_rpc",
  "rpc.service": req.method.parent.typeName,
  "rpc.method": req.method.name,
});

/** A streamed answer's span ends with its last message (or its failure, or when left unread). */
async function* endWithStream<T>(messages: AsyncIterable<T>, span: Parameters<typeof endSpan>[0]): AsyncIterable<T> {
  let err: unknown;
  try {
    yield* messages;
  } catch (e) {
    err = e;
    throw e;
  } finally {
    endSpan(span, err);
  }
}

// The reason travels as a detail the gateway does not know: a refused internal call is the
// system's failure (500 INTERNAL at the edge), never the end client's 401 or 403. The why stays
// in this process's log.
const refusal = (code: Code.Unauthenticated | Code.PermissionDenied) =>
  new ConnectError(code === Code.Unauthenticated ? "internal call not authenticated" : "internal call not allowed", code, undefined, [
    { desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { reason: code === Code.Unauthenticated ? "INTERNAL_UNAUTHENTICATED" : "INTERNAL_PERMISSION_DENIED" }) },
  ]);

/** Tenant and caller of a call from a verified token whose signer the allow-list lets call this RPC. */
function admit(log: Logger, auth: InternalAuth, req: UnaryRequest | StreamRequest): Code.Unauthenticated | Code.PermissionDenied | null {
  const refuse = (code: Code.Unauthenticated | Code.PermissionDenied, reason: string) => {
    log.warn({ rpc: req.url, reason }, "internal call refused");
    return code;
  };
  const rule = callRuleOf(req.method);
  // A method the allow-list does not know (a service mounted without rules): nobody may call it.
  if (!rule) return refuse(Code.PermissionDenied, "no rule names this method");
  const claims = auth.verify(req.header.get(INTERNAL_AUTH_HEADER), rule);
  if ("refused" in claims) return refuse(Code.Unauthenticated, claims.refused);
  if (!rule.callers.includes(claims.signer)) return refuse(Code.PermissionDenied, `${claims.signer} may not call ${rule.method}`);
  req.contextValues.set(tenantKey, claims.tenantId);
  req.contextValues.set(callerKey, claims.caller);
  return null;
}

/**
 * The service-side plumbing every call passes: tenant and caller from a verified internal token
 * for this RPC, signed by a process its allow-list names (probes' Health/Check excepted), errors
 * mapped to ConnectError with the interface code, unexpected failures logged with their cause.
 */
export function createServerInterceptor(log: Logger, auth: InternalAuth): Interceptor {
  const timer = createRpcTimer();
  return (next) => (req) => {
    const probe = req.method.parent.typeName === Health.typeName && req.method.name === "Check";
    if (probe || !tracingOn()) return serve(next, req, timer.start(req.method));
    // The server span: a child of the caller's span named by the call's `traceparent`.
    return startSpan(`${req.method.parent.typeName}/${req.method.name}`, { kind: SpanKind.SERVER, attributes: rpcAttributes(req), parent: req.header }, (span) => {
      const timed = timer.start(req.method);
      return serve(next, req, (code) => {
        timed(code);
        endSpan(span, code === null ? undefined : new ConnectError(Code[code] ?? "failed", code));
      });
    });
  };

  async function serve(next: Parameters<Interceptor>[0], req: UnaryRequest | StreamRequest, done: (code: Code | null) => void) {
    const given = req.header.get(H_REQUEST);
    const rid = given && REQUEST_ID.test(given) ? given : "";
    req.contextValues.set(requestIdKey, rid);
    const probe = req.method.parent.typeName === Health.typeName && req.method.name === "Check";
    const refused = probe ? null : admit(log, auth, req);
    if (refused !== null) {
      done(refused);
      throw refusal(refused);
    }
    const mapped = (e: unknown) => {
      const ce = toConnectError(e);
      if (ce.code === Code.Internal) {
        log.error({ err: e, rpc: req.url, requestId: rid }, "rpc failed");
      }
      return ce;
    };
    try {
      // In a process of its own, a call's database commands count under the RPC; in process, the
      // route that made the call already names the work.
      const work = currentWork() === "background" ? `rpc:${req.method.parent.typeName}/${req.method.name}` : null;
      const res = await (work ? workScope.run({ work }, () => next(req)) : next(req));
      // A streamed answer fails while it is read: map those errors the same way, and time the
      // call to its last message.
      if (res.stream) return { ...res, message: mapStreamErrors(res.message, mapped, done) };
      done(null);
      return res;
    } catch (e) {
      const ce = mapped(e);
      done(ce.code);
      throw ce;
    }
  }
}

async function* mapStreamErrors<T>(
  messages: AsyncIterable<T>,
  mapped: (e: unknown) => ConnectError,
  done: (code: Code | null) => void,
): AsyncIterable<T> {
  let code: Code | null = Code.Canceled;
  try {
    yield* messages;
    code = null;
  } catch (e) {
    const ce = mapped(e);
    code = ce.code;
    throw ce;
  } finally {
    // Left unread by its consumer: canceled.
    done(code);
  }
}
