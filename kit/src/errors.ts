import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { ErrorDetailSchema } from "@feeds/proto/feeds/common/v1/common";

// The interface's error codes (section 7) plus CONTENT_REJECTED (contract section 4).
export const ErrorCode = {
  VALIDATION_FAILED: "VALIDATION_FAILED",
  UNAUTHENTICATED: "UNAUTHENTICATED",
  FORBIDDEN: "FORBIDDEN",
  NOT_FOUND: "NOT_FOUND",
  CONFLICT: "CONFLICT",
  RATE_LIMITED: "RATE_LIMITED",
  CONTENT_REJECTED: "CONTENT_REJECTED",
  INTERNAL: "INTERNAL",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface FieldError {
  path: string;
  message: string;
}

/** The one table: interface code → HTTP status, Connect code, retryability. */
export const errorTable: Record<ErrorCode, { status: number; connect: Code; retryable: boolean }> = {
  VALIDATION_FAILED: { status: 400, connect: Code.InvalidArgument, retryable: false },
  UNAUTHENTICATED: { status: 401, connect: Code.Unauthenticated, retryable: false },
  FORBIDDEN: { status: 403, connect: Code.PermissionDenied, retryable: false },
  NOT_FOUND: { status: 404, connect: Code.NotFound, retryable: false },
  CONFLICT: { status: 409, connect: Code.FailedPrecondition, retryable: false },
  RATE_LIMITED: { status: 429, connect: Code.ResourceExhausted, retryable: true },
  CONTENT_REJECTED: { status: 422, connect: Code.InvalidArgument, retryable: false },
  INTERNAL: { status: 500, connect: Code.Internal, retryable: true },
};

/** A failure the interface names. `message` is safe to show callers; `cause` is for logs only. */
export class FeedsError extends Error {
  override readonly name: string = "FeedsError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields: FieldError[] = [],
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
  readonly retryAfterSeconds: number | undefined;
  get status(): number {
    return errorTable[this.code].status;
  }
  get retryable(): boolean {
    return errorTable[this.code].retryable;
  }
}

export const validationFailed = (fields: FieldError[], message = "request validation failed") =>
  new FeedsError("VALIDATION_FAILED", message, fields);
export const unauthenticated = (message = "authentication required") =>
  new FeedsError("UNAUTHENTICATED", message);
export const forbidden = (message = "not allowed") => new FeedsError("FORBIDDEN", message);
export const notFound = (message = "not found") => new FeedsError("NOT_FOUND", message);
export const conflict = (message: string) => new FeedsError("CONFLICT", message);
export const rateLimited = (retryAfterSeconds: number) =>
  new FeedsError("RATE_LIMITED", "rate limit exceeded", [], { retryAfterSeconds });
export const internal = (cause?: unknown) =>
  new FeedsError("INTERNAL", "internal error", [], { cause });

export const isFeedsError = (e: unknown): e is FeedsError => e instanceof FeedsError;
export const isCode = (e: unknown, code: ErrorCode): boolean => isFeedsError(e) && e.code === code;

/** MongoDB duplicate key (code 11000). */
/** Whether `test` holds for `err` or one of the errors it was caused by (five deep at most). */
export function someCause(err: unknown, test: (e: Error & { code?: unknown }) => boolean): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (test(e)) return true;
  }
  return false;
}

export function isDuplicateKey(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: unknown }).code === 11000;
}

/** Service side: a FeedsError becomes a ConnectError with its code and detail; anything else is INTERNAL. */
export function toConnectError(e: unknown): ConnectError {
  if (e instanceof ConnectError) return e;
  const err = isFeedsError(e) ? e : internal(e);
  const detail = create(ErrorDetailSchema, { reason: err.code, fields: err.fields });
  return new ConnectError(err.message, errorTable[err.code].connect, undefined, [
    { desc: ErrorDetailSchema, value: detail },
  ]);
}

const byConnectCode = new Map<Code, ErrorCode>([
  [Code.InvalidArgument, "VALIDATION_FAILED"],
  [Code.Unauthenticated, "UNAUTHENTICATED"],
  [Code.PermissionDenied, "FORBIDDEN"],
  [Code.NotFound, "NOT_FOUND"],
  [Code.FailedPrecondition, "CONFLICT"],
  [Code.AlreadyExists, "CONFLICT"],
  [Code.ResourceExhausted, "RATE_LIMITED"],
]);

/** Gateway side: whatever a call threw becomes a FeedsError (unknown failures are INTERNAL). */
export function fromRpcError(e: unknown): FeedsError {
  if (isFeedsError(e)) return e;
  if (e instanceof ConnectError) {
    const [detail] = e.findDetails(ErrorDetailSchema);
    const code = (detail?.reason as ErrorCode | undefined) ?? byConnectCode.get(e.code) ?? "INTERNAL";
    if (!(code in errorTable) || code === "INTERNAL") return internal(e);
    const fields = detail?.fields.map((f) => ({ path: f.path, message: f.message })) ?? [];
    return new FeedsError(code, e.rawMessage, fields, { cause: e });
  }
  return internal(e);
}
