import { ErrorCodes, type ErrorCode } from "@feeds/contract";

// The parts every operation shares: security schemes, headers, and the error answers.

type Json = Record<string, unknown>;
const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });

export const securitySchemes = {
  serverToken: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "A server token: a JWT signed with the tenant's api secret, for the tenant's own backend. Never ship it to a browser.",
  },
  userToken: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "A user token: a JWT for one end user of the tenant, minted by the tenant's backend.",
  },
  operatorSession: {
    type: "http",
    scheme: "bearer",
    description: "An operator session token from POST /operator/login or POST /operator/invite/accept.",
  },
};

/** Request headers, as reusable parameters. */
export const parameters = {
  RequestId: {
    name: "X-Request-Id",
    in: "header",
    required: false,
    description: "Your id for this request (1–128 of A-Z a-z 0-9 . _ : -): used as the request id, echoed back and in the error envelope; any other value is replaced by one of ours.",
    schema: { type: "string", minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9._:-]{1,128}$" },
  },
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "1–255 printable characters. A repeat with the same key and body within 24 hours answers the first answer again (Idempotent-Replayed: true); with another body, 409 CONFLICT; while the first still runs, 429 with Retry-After: 1.",
    schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7E]{1,255}$" },
  },
  IfNoneMatch: {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "The ETag of a previous answer: 304 with no body while it is still current.",
    schema: { type: "string" },
  },
};

const integer = { type: "integer", minimum: 0 };
/** Response headers. */
export const headers = {
  RequestId: { description: "The request id (yours when X-Request-Id was valid).", schema: { type: "string" } },
  ETag: { description: "The version of the answer; send it back as If-None-Match.", schema: { type: "string" } },
  RetryAfter: { description: "Seconds to wait before trying again.", schema: integer },
  RateLimitLimit: { description: "Requests the caller's window allows.", schema: integer },
  RateLimitRemaining: { description: "Requests left in the caller's window.", schema: integer },
  RateLimitReset: { description: "Seconds until the caller's window resets.", schema: integer },
  IdempotentReplayed: { description: "`true` when the answer is a replay of an earlier request with the same Idempotency-Key.", schema: { type: "string", enum: ["true"] } },
};

export const rateHeaders = {
  "RateLimit-Limit": ref("headers", "RateLimitLimit"),
  "RateLimit-Remaining": ref("headers", "RateLimitRemaining"),
  "RateLimit-Reset": ref("headers", "RateLimitReset"),
};

/** The error envelope, with the interface's codes. */
export const errorSchemas: Record<string, Json> = {
  ErrorCode: { type: "string", enum: Object.values(ErrorCodes), description: "RATE_LIMITED and INTERNAL are retryable; the others are final." },
  FieldError: {
    type: "object",
    required: ["path", "message"],
    properties: { path: { type: "string", description: "the field, e.g. `custom.title`; empty for the whole body" }, message: { type: "string" } },
  },
  Error: {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "message", "requestId"],
        properties: {
          code: ref("schemas", "ErrorCode"),
          message: { type: "string" },
          requestId: { type: "string" },
          fields: { type: "array", items: ref("schemas", "FieldError"), description: "VALIDATION_FAILED only: each invalid field" },
        },
      },
    },
    example: { error: { code: "NOT_FOUND", message: "not found", requestId: "5b0f6a52-1c2d-4e3f-8a9b-0c1d2e3f4a5b" } },
  },
};

/** Each error status: its component name, code and what it means. */
export const errorAnswers: Record<number, { name: string; code: ErrorCode; description: string }> = {
  400: { name: "ValidationFailed", code: "VALIDATION_FAILED", description: "The request is malformed or a field is invalid (fields name each)." },
  401: { name: "Unauthenticated", code: "UNAUTHENTICATED", description: "No valid credential." },
  403: { name: "Forbidden", code: "FORBIDDEN", description: "The credential may not do this." },
  404: { name: "NotFound", code: "NOT_FOUND", description: "No such resource." },
  409: { name: "Conflict", code: "CONFLICT", description: "The request conflicts with the current state (or an Idempotency-Key was used for another request)." },
  422: { name: "ContentRejected", code: "CONTENT_REJECTED", description: "The text holds a term of the tenant's blocklist." },
  429: { name: "RateLimited", code: "RATE_LIMITED", description: "Too many requests, or the gateway is shedding load: wait Retry-After seconds." },
  500: { name: "Internal", code: "INTERNAL", description: "An unexpected failure; retrying is safe for idempotent requests." },
};

export function errorResponses(): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [status, e] of Object.entries(errorAnswers)) {
    const extra = status === "429" ? { "Retry-After": ref("headers", "RetryAfter"), ...rateHeaders } : {};
    out[e.name] = {
      description: e.description,
      headers: { "X-Request-Id": ref("headers", "RequestId"), ...extra },
      content: {
        "application/json": {
          schema: ref("schemas", "Error"),
          example: { error: { code: e.code, message: e.description, requestId: "5b0f6a52-1c2d-4e3f-8a9b-0c1d2e3f4a5b" } },
        },
      },
    };
  }
  return out;
}

export { ref };
