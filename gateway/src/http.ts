import type { FastifyInstance, FastifyReply } from "fastify";
import type { z } from "zod";
import { FeedsError, fromRpcError, validationFailed, type ErrorCode, type FieldError, type Logger } from "@feeds/kit";

// Interface section 5 rule 12: a 401 or 403 never says why, whoever decided it (gateway or
// service); the reason goes to the log under the request id.
const WIRE_MESSAGES: Partial<Record<ErrorCode, string>> = {
  UNAUTHENTICATED: "authentication required",
  FORBIDDEN: "not allowed",
};

/** Sends the interface's error envelope (section 7). */
export function sendError(reply: FastifyReply, requestId: string, err: FeedsError): FastifyReply {
  if (err.code === "RATE_LIMITED") reply.header("retry-after", String(err.retryAfterSeconds ?? 1));
  const error: Record<string, unknown> = { code: err.code, message: WIRE_MESSAGES[err.code] ?? err.message, requestId };
  if (err.code === "VALIDATION_FAILED") error.fields = err.fields;
  return reply.code(err.status).send({ error });
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
