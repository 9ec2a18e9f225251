/**
 * The SDK's one error type (interface section 7, rule 5).
 *
 * Every failed call throws a `FeedsApiError` built from the error envelope
 * `{error: {code, message, requestId, fields?}}`. Network failures and timeouts are
 * `INTERNAL` with status 0.
 */

export const ErrorCodes = {
  VALIDATION_FAILED: "VALIDATION_FAILED",
  UNAUTHENTICATED: "UNAUTHENTICATED",
  FORBIDDEN: "FORBIDDEN",
  NOT_FOUND: "NOT_FOUND",
  CONFLICT: "CONFLICT",
  CONTENT_REJECTED: "CONTENT_REJECTED",
  RATE_LIMITED: "RATE_LIMITED",
  INTERNAL: "INTERNAL",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** The codes a client retries (interface section 7): everything else is final. */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set<string>([
  ErrorCodes.RATE_LIMITED,
  ErrorCodes.INTERNAL,
]);

/**
 * Code used when an error answer carries no usable envelope (for example a proxy's HTML page).
 * The interface's table maps each of these statuses to one code; any other status is INTERNAL.
 */
const STATUS_FALLBACK_CODES: Record<number, ErrorCode> = {
  400: "VALIDATION_FAILED",
  401: "UNAUTHENTICATED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "CONFLICT",
  422: "CONTENT_REJECTED",
  429: "RATE_LIMITED",
};

export interface FieldError {
  path: string;
  message: string;
}

export interface FeedsApiErrorInit {
  /** The envelope's code; one this version does not know becomes its status's code (see `rawCode`). */
  code: string;
  message: string;
  status: number;
  requestId?: string | undefined;
  retryAfterSeconds?: number | undefined;
  fields?: FieldError[] | undefined;
  url: string;
  method?: string | undefined;
  cause?: unknown;
}

export class FeedsApiError extends Error {
  override readonly name = "FeedsApiError";
  /**
   * The envelope's code, e.g. `NOT_FOUND`; `INTERNAL` for network failures and unusable bodies. A
   * code this version does not know (from a newer server) becomes the code of the answer's status
   * (the interface's table; INTERNAL otherwise), so a switch over ErrorCode is exhaustive.
   */
  readonly code: ErrorCode;
  /** The code as the server sent it (equal to `code` unless the server sent one unknown here). */
  readonly rawCode: string;
  /** HTTP status; 0 when no answer was received (network failure, timeout). */
  readonly status: number;
  /** The envelope's `requestId` (or the `x-request-id` header); "" when neither is present. */
  readonly requestId: string;
  /** Seconds from the `Retry-After` header (sent with 429), when present and parseable. */
  readonly retryAfterSeconds: number | undefined;
  /** Field errors of a VALIDATION_FAILED answer; [] when absent. */
  readonly fields: FieldError[];
  /** The request URL. */
  readonly url: string;
  /** The request method (extra; not part of the interface's list). */
  readonly method: string | undefined;

  constructor(init: FeedsApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = isErrorCode(init.code) ? init.code : (STATUS_FALLBACK_CODES[init.status] ?? ErrorCodes.INTERNAL);
    this.rawCode = init.code;
    this.status = init.status;
    this.requestId = init.requestId ?? "";
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.fields = init.fields ?? [];
    this.url = init.url;
    this.method = init.method;
  }

  /** True for RATE_LIMITED and INTERNAL, the codes the retry policy retries. */
  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }

  /**
   * Builds the error for a non-success HTTP answer from its status, headers and body text.
   * A body that is not the error envelope gets the code of its status from the interface's
   * table (400, 401, 403, 404, 409, 422, 429), otherwise INTERNAL; the status is kept.
   */
  static fromResponse(args: {
    status: number;
    headers: Headers;
    bodyText: string;
    url: string;
    method?: string | undefined;
  }): FeedsApiError {
    const { status, headers, bodyText, url, method } = args;
    const headerRequestId = headers.get("x-request-id") ?? undefined;
    const retryAfterSeconds = parseRetryAfter(headers.get("retry-after"));
    const envelope = parseEnvelope(bodyText);
    if (envelope) {
      return new FeedsApiError({
        code: envelope.code,
        message: envelope.message || `HTTP ${status}`,
        status,
        requestId: envelope.requestId ?? headerRequestId,
        retryAfterSeconds,
        fields: envelope.fields,
        url,
        method,
      });
    }
    const code = STATUS_FALLBACK_CODES[status] ?? ErrorCodes.INTERNAL;
    const snippet = bodyText.trim().slice(0, 200);
    return new FeedsApiError({
      code,
      message: `HTTP ${status} without an error envelope${snippet ? `: ${snippet}` : ""}`,
      status,
      requestId: headerRequestId,
      retryAfterSeconds,
      url,
      method,
    });
  }

  /** Builds the error for a request that got no HTTP answer (fetch threw, or timed out). */
  static network(url: string, cause: unknown, method?: string): FeedsApiError {
    const reason =
      cause instanceof Error
        ? cause.name === "TimeoutError"
          ? "request timed out"
          : cause.message || cause.name
        : String(cause);
    return new FeedsApiError({
      code: ErrorCodes.INTERNAL,
      message: `network error: ${reason}`,
      status: 0,
      url,
      method,
      cause,
    });
  }
}

const KNOWN_CODES: ReadonlySet<string> = new Set<string>(Object.values(ErrorCodes));
/** True for a code of the interface's table. */
export function isErrorCode(value: string): value is ErrorCode {
  return KNOWN_CODES.has(value);
}

export function isFeedsApiError(value: unknown): value is FeedsApiError {
  return value instanceof FeedsApiError;
}

/**
 * Parses a `Retry-After` header: integer (or decimal) seconds, or an HTTP date (converted to
 * seconds from now, never negative). Returns undefined when absent or unparseable.
 */
export function parseRetryAfter(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

interface ParsedEnvelope {
  code: string;
  message: string;
  requestId: string | undefined;
  fields: FieldError[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseEnvelope(text: string): ParsedEnvelope | undefined {
  if (text.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(parsed)) return undefined;
  const error = parsed["error"];
  if (!isRecord(error)) return undefined;
  const code = error["code"];
  if (typeof code !== "string" || code === "") return undefined;
  const message = typeof error["message"] === "string" ? error["message"] : "";
  const requestId = typeof error["requestId"] === "string" ? error["requestId"] : undefined;
  const rawFields = error["fields"];
  const fields: FieldError[] = [];
  if (Array.isArray(rawFields)) {
    for (const f of rawFields) {
      if (!isRecord(f)) continue;
      fields.push({
        path: typeof f["path"] === "string" ? f["path"] : "",
        message: typeof f["message"] === "string" ? f["message"] : "",
      });
    }
  }
  return { code, message, requestId, fields };
}
