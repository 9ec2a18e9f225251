import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from "fastify";
import type { z } from "zod";
import { FeedsError, fastifyTrustProxy, fromRpcError, nameServerSpan, tracingOn, validationFailed, type Config, type ErrorCode, type FieldError, type Logger } from "@feeds/kit";

// Interface section 5 rule 12: a 401 or 403 never says why, whoever decided it (gateway or
// service); the reason goes to the log under the request id.
const WIRE_MESSAGES: Partial<Record<ErrorCode, string>> = {
  UNAUTHENTICATED: "authentication required",
  FORBIDDEN: "not allowed",
};

// Contract section 6: an inbound X-Request-Id of this form becomes the request's id; any other
// (absent, empty, too long, other characters, or a repeated header, which Node joins with ", ")
// is replaced by a fresh UUID. The charset keeps an id safe to echo in headers and to log.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of a request: the client's `X-Request-Id` when it is well formed, else a new UUID. */
export function requestIdOf(req: Pick<IncomingMessage, "headers">): string {
  const given = req.headers["x-request-id"];
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

/** The interface's error envelope (section 7) of `err`. */
function envelopeOf(requestId: string, err: FeedsError): { error: Record<string, unknown> } {
  const error: Record<string, unknown> = { code: err.code, message: WIRE_MESSAGES[err.code] ?? err.message, requestId };
  if (err.code === "VALIDATION_FAILED") error.fields = err.fields;
  return { error };
}

/** Sends the interface's error envelope (section 7). */
export function sendError(reply: FastifyReply, requestId: string, err: FeedsError): FastifyReply {
  if (err.code === "RATE_LIMITED") reply.header("retry-after", String(err.retryAfterSeconds ?? 1));
  return reply.code(err.status).send(envelopeOf(requestId, err));
}

/** Any thrown value → FeedsError: ours as is, RPC errors by the one table, Fastify 4xx as
 * VALIDATION_FAILED (every status stays inside the interface's table), the rest INTERNAL. */
export function toFeedsError(e: unknown): FeedsError {
  if (e instanceof FeedsError) return e;
  const fe = e as { statusCode?: unknown; code?: unknown; message?: unknown };
  if (
    typeof fe.statusCode === "number" &&
    fe.statusCode >= 400 &&
    fe.statusCode < 500 &&
    typeof fe.code === "string" &&
    fe.code.startsWith("FST_")
  ) {
    const message =
      fe.code === "FST_ERR_CTP_BODY_TOO_LARGE"
        ? "request body too large"
        : typeof fe.message === "string"
          ? fe.message
          : "bad request";
    return validationFailed([{ path: "", message }], message);
  }
  return fromRpcError(e);
}

/** The gateway's Fastify and HTTP server options: limits, deadlines and the answers of errors no route sees. */
export function serverOptions(config: Pick<Config, "TRUST_PROXY" | "REQUEST_TIMEOUT_MS" | "REQUEST_HEADERS_TIMEOUT_MS">, log: Pick<Logger, "info">): FastifyServerOptions {
  return {
    logger: false,
    trustProxy: fastifyTrustProxy(config.TRUST_PROXY),
    // requestIdHeader would take any value; requestIdOf checks the client's header first.
    genReqId: requestIdOf,
    requestIdHeader: false,
    bodyLimit: 1024 * 1024,
    // Long ids must reach validation (400), not Fastify's 414.
    routerOptions: { maxParamLength: 2048 },
    // A client that stalls its headers or body loses its connection (answerClientError). Node
    // tests these deadlines every connectionsCheckingInterval (30 s unless told); 72 s keep-alive
    // is Fastify's own default.
    serverFactory: (handler: Parameters<typeof createServer>[1]) =>
      createServer(
        {
          requestTimeout: config.REQUEST_TIMEOUT_MS,
          headersTimeout: config.REQUEST_HEADERS_TIMEOUT_MS,
          connectionsCheckingInterval: 1000,
          keepAliveTimeout: 72_000,
        },
        handler,
      ),
    clientErrorHandler: (err: Error, socket: Socket) => answerClientError(err, socket, log),
    frameworkErrors: (err: Error, req: FastifyRequest, reply: FastifyReply) => {
      answerFrameworkError(err, req.id, reply);
    },
  };
}

/** Errors of Fastify's router, before any route runs: a malformed URL, an over-long path segment. */
export function answerFrameworkError(e: Error & { code?: string }, requestId: string, reply: FastifyReply): FastifyReply {
  reply.header("x-request-id", requestId);
  if (e.code === "FST_ERR_MAX_PARAM_LENGTH") {
    // No route takes a segment that long (ids are at most 128 characters).
    return sendError(reply, requestId, new FeedsError("NOT_FOUND", "no route matches a path segment that long"));
  }
  return sendError(reply, requestId, validationFailed([{ path: "", message: "malformed URL" }], "malformed URL"));
}

/** Every answer names its request in `X-Request-Id`, errors and unknown routes included. */
export function installRequestIds(app: FastifyInstance): void {
  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
  });
}

/**
 * With tracing on, the request's HTTP server span is named after its route template (`POST
 * /v1/feeds/:group/:id/activities`), so that traces group by route, never by a raw path.
 */
export function installTraceNames(app: FastifyInstance): void {
  if (!tracingOn()) return;
  app.addHook("onRequest", async (req) => {
    nameServerSpan(req.method, req.routeOptions.url ?? "unmatched");
  });
}

/**
 * One access log line per answered request, at info: method, route template (`unmatched` when no
 * route matched), status, milliseconds, request id, and the tenant when the request authenticated
 * as one (`tenantOf`). Never a header, a query string or a body, so never a token or a secret.
 */
export function installAccessLog(app: FastifyInstance, log: Pick<Logger, "info">, tenantOf: (req: FastifyRequest) => string | undefined = () => undefined): void {
  app.addHook("onResponse", async (req, reply) => {
    const tenant = tenantOf(req);
    log.info(
      {
        requestId: req.id,
        method: req.method,
        route: req.routeOptions.url ?? "unmatched",
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        ...(tenant ? { tenant } : {}),
      },
      "request",
    );
  });
}

export function installErrorHandling(app: FastifyInstance, log: Pick<Logger, "error" | "info">) {
  app.setErrorHandler((e, req, reply) => {
    const err = toFeedsError(e);
    if (err.code === "INTERNAL") log.error({ err: err.cause ?? e, requestId: req.id, url: req.url }, "request failed");
    if (WIRE_MESSAGES[err.code] !== undefined) {
      log.info({ requestId: req.id, code: err.code, reason: err.message, method: req.method, path: req.url.split("?")[0] }, "request refused");
    }
    return sendError(reply, req.id, err);
  });
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, req.id, new FeedsError("NOT_FOUND", `no route ${req.method} ${req.url.split("?")[0]}`)),
  );
}

/** zod issues → the envelope's `fields` (path "" for errors about the whole input). */
export function zodFields(error: z.ZodError): FieldError[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}

/** Parses one part of a request; a failure is VALIDATION_FAILED naming each field. */
export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (!r.success) throw validationFailed(zodFields(r.error));
  return r.data;
}

const CLIENT_ERRORS: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: "the request did not arrive in time",
  HPE_HEADER_OVERFLOW: "request line or headers too large",
};

/**
 * A request Node's HTTP parser refused (malformed, headers or URL too large) or that did not
 * arrive within the server's deadlines: answered 400 VALIDATION_FAILED in the envelope (Node's
 * and Fastify's own answers are bare 400, 408 and 431), then the connection closed. As Node does,
 * nothing is written once an answer has started on the connection.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket, log: Pick<Logger, "info">): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const message = CLIENT_ERRORS[err.code ?? ""] ?? "malformed HTTP request";
  const requestId = randomUUID();
  log.info({ requestId, code: err.code, reason: message }, "client error");
  const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (socket.writable && !started) {
    const body = JSON.stringify(envelopeOf(requestId, validationFailed([{ path: "", message }], message)));
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
