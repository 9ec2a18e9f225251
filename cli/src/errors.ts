import { FeedsApiError } from "@feeds/node";

/** A failure the CLI explains itself: one line on stderr, then `exitCode` (2: bad usage, 1: the rest). */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
  }
}

/** Bad input on the command line (exit 2). */
export const usageError = (message: string) => new CliError(message, 2);

/** Which credential the failed call carried, to say what to do about a 401. */
export type Credential = "none" | "session" | "tenant";

const networkCodes: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "no such host",
  EAI_AGAIN: "the host name did not resolve",
  ECONNRESET: "the connection was reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "the connection timed out",
};

/** What the innermost error of a fetch failure says (fetch wraps the socket's error in `cause`). */
function networkReason(e: FeedsApiError): string {
  let reason = e.message.replace(/^network error: /, "");
  let cause: unknown = e.cause;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string") return networkCodes[code] ?? code;
    if (cause.name === "TimeoutError") return "no answer in time";
    reason = cause.message;
    cause = cause.cause;
  }
  return reason;
}

const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
};

/** One line that says what went wrong, never a stack trace. */
export function describeError(e: unknown, credential: Credential, profile: string): string {
  if (e instanceof CliError) return e.message;
  if (e instanceof FeedsApiError) {
    const at = originOf(e.url);
    if (e.status === 0) return `cannot reach ${at}: ${networkReason(e)} (is the URL right, and the system running?)`;
    if (e.requestId === "" && e.message.startsWith(`HTTP ${e.status} without`)) {
      return `${at} answered HTTP ${e.status} without the API's error envelope: is it a feeds server?`;
    }
    if (e.code === "UNAUTHENTICATED" && credential === "session") {
      return `the session in profile "${profile}" is no longer accepted (expired, logged out or disabled): run feeds login`;
    }
    if (e.code === "UNAUTHENTICATED" && credential === "tenant") {
      return `${at} does not accept the tenant's api key and secret (rotated, or another system's?)`;
    }
    const fields = e.fields.map((f) => (f.path ? `${f.path}: ${f.message}` : f.message)).join("; ");
    const detail = fields ? ` (${fields})` : "";
    return `${e.code} (HTTP ${e.status}): ${e.message}${detail}${e.requestId ? ` [request ${e.requestId}]` : ""}`;
  }
  if (e instanceof Error) return `${e.message}`;
  return String(e);
}

/** The process's exit code for a failure. */
export const exitCodeOf = (e: unknown): number => (e instanceof CliError ? e.exitCode : 1);
