import { FeedsApiError, ErrorCodes } from "@feeds/contract/errors";
import { isRetrySafe, withIdempotencyKey } from "./retry-policy.js";

/**
 * HTTP core: one `HttpClient` per base URL and credential.
 *
 * - `call()` / `send()`: JSON in, JSON out, throws `FeedsApiError`, applies the retry policy
 *   (interface section 7, retry-policy.ts): only RATE_LIMITED and INTERNAL are retried, and only
 *   requests that are safe to repeat (GET, HEAD, PUT, DELETE; a POST or PATCH with an
 *   Idempotency-Key, which the client adds to every POST and PATCH unless told not to; a POST
 *   carrying `foreign_id` and `time`). It waits `Retry-After` seconds when the answer carries it
 *   (a wait longer than `maxRetryAfterSeconds` is not waited: the error is thrown at once),
 *   otherwise exponential backoff with jitter; at most `maxRetries` retries (default 3, 0
 *   disables). Every other code is final. With `refreshOnUnauthenticated`, an UNAUTHENTICATED
 *   answer is retried once with a token obtained from the token source with `{refresh: true}`.
 * - a per-call `signal` aborts the request and any wait; the call then rejects with the signal's
 *   reason (an `AbortError` unless the caller gave another), not a FeedsApiError.
 * - `raw()`: one attempt, never throws for an HTTP answer, no retry — for asserting on exact
 *   statuses, headers and bodies.
 */

export type QueryPrimitive = string | number | boolean;
export type QueryValue = QueryPrimitive | null | undefined | readonly QueryPrimitive[];
export type Query = Record<string, QueryValue>;

export interface TokenContext {
  /** True when the previous attempt answered UNAUTHENTICATED and a fresh token is wanted. */
  refresh: boolean;
  /** With `refresh`: the token that was refused. */
  refused?: string | undefined;
}
/** A bearer token, or a function returning one (undefined: send no Authorization header). */
export type TokenSource =
  | string
  | ((ctx: TokenContext) => string | undefined | Promise<string | undefined>);

export interface HttpOptions {
  /** Retries after RATE_LIMITED / INTERNAL. Default 3; 0 disables retrying. */
  maxRetries?: number | undefined;
  /** The fetch implementation. Default: the global fetch. */
  fetch?: typeof fetch | undefined;
  /** Per-attempt timeout in milliseconds (a timeout is INTERNAL, status 0). Default 30000; 0 disables. */
  timeoutMs?: number | undefined;
  /** How to wait between retries. Default: setTimeout. Injectable for tests. */
  sleep?: ((ms: number) => Promise<void>) | undefined;
  /** First backoff step when no Retry-After is given. Default 100 ms (then 200, 400, ...). */
  retryBaseDelayMs?: number | undefined;
  /** Backoff cap. Default 2000 ms. */
  retryMaxDelayMs?: number | undefined;
  /** Extra headers sent with every request. */
  headers?: Record<string, string> | undefined;
  /**
   * The longest `Retry-After` the client waits, in seconds. Default 60. An answer asking for a
   * longer wait is thrown at once (its `retryAfterSeconds` says how long the server asked for).
   */
  maxRetryAfterSeconds?: number | undefined;
  /**
   * Send a fresh Idempotency-Key (crypto.randomUUID) with every POST and PATCH that has none, so
   * that it may be retried. Default true. With false, such a write is retried only when it is a
   * POST carrying `foreign_id` and `time`, or when the call passes its own key.
   */
  idempotencyKeys?: boolean | undefined;
}

export interface HttpClientConfig extends HttpOptions {
  baseUrl: string;
  token?: TokenSource | undefined;
  /** Retry once with `token({refresh: true})` after UNAUTHENTICATED. Default false. */
  refreshOnUnauthenticated?: boolean | undefined;
}

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS";

export interface RequestSpec {
  method: HttpMethod | (string & {});
  /** Path below the base URL (e.g. `/v1/health`), or an absolute URL. */
  path: string;
  /** Query parameters; undefined and null values are skipped, arrays are joined with commas. */
  query?: Query | undefined;
  /**
   * Request body. Objects and arrays are sent as JSON; a string or Uint8Array is sent verbatim
   * (still labelled `application/json` unless a content-type header is given).
   */
  body?: unknown;
  /** Extra headers; undefined values are skipped. An `authorization` header here wins. */
  headers?: Record<string, string | undefined> | undefined;
  /** false: send no token; a string: use this bearer token instead of the client's. */
  auth?: boolean | string | undefined;
  /** Aborts the request (and, for `call()`/`send()`, any wait between attempts). */
  signal?: AbortSignal | undefined;
}

/** What every method of a client takes last: per-call options. */
export interface CallOptions {
  /** Aborts the call: its request and any wait before a retry. */
  signal?: AbortSignal | undefined;
  /**
   * The Idempotency-Key of a POST or PATCH (1–255 printable characters): a string to send your
   * own (the same key on a later call makes it a repeat of this one), false to send none (the
   * write is then not retried unless it is an activity with `foreign_id` and `time`). Default: a
   * fresh key per call, reused by its retries.
   */
  idempotencyKey?: string | false | undefined;
}

export interface CallSpec extends RequestSpec {
  /** Non-2xx statuses to treat as success (no throw, no retry), e.g. [503] for readiness. */
  okStatuses?: readonly number[] | undefined;
  /** Overrides the client's maxRetries for this call. */
  maxRetries?: number | undefined;
  /** See CallOptions.idempotencyKey. */
  idempotencyKey?: string | false | undefined;
}

export interface RawResponse<T = unknown> {
  status: number;
  /** True for 2xx. */
  ok: boolean;
  headers: Headers;
  /** Parsed JSON; the text itself when it is not JSON; undefined when the body is empty. */
  body: T;
  /** The body text as received. */
  text: string;
  url: string;
}

const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_BASE_DELAY_MS = 100;
const DEFAULT_MAX_DELAY_MS = 2_000;
const DEFAULT_MAX_RETRY_AFTER_SECONDS = 60;

export const defaultSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/** `sleep(ms)` that ends early, rejecting with the signal's reason, when `signal` aborts. */
function abortableSleep(sleep: (ms: number) => Promise<void>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return sleep(ms);
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    sleep(ms).then(
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** Backoff with "equal jitter": a random value in [d/2, d] where d = min(cap, base * 2^attempt). */
export function backoffDelay(attempt: number, baseMs: number, capMs: number): number {
  const d = Math.min(capMs, baseMs * 2 ** attempt);
  return Math.round(d / 2 + (Math.random() * d) / 2);
}

export function buildUrl(baseUrl: string, path: string, query?: Query): string {
  const base = baseUrl.replace(/\/+$/, "");
  const url = /^https?:\/\//i.test(path)
    ? new URL(path)
    : new URL(base + (path.startsWith("/") ? path : `/${path}`));
  if (query) {
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) {
        url.searchParams.append(key, value.map(String).join(","));
      } else {
        url.searchParams.append(key, String(value));
      }
    }
  }
  return url.toString();
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  const lower = name.toLowerCase();
  return Object.keys(headers).some((k) => k.toLowerCase() === lower);
}

export class HttpClient {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly defaultHeaders: Record<string, string>;
  private readonly refreshOnUnauthenticated: boolean;
  private readonly maxRetryAfterSeconds: number;
  private readonly idempotencyKeys: boolean;
  private tokenSource: TokenSource | undefined;

  constructor(config: HttpClientConfig) {
    if (typeof config.baseUrl !== "string" || config.baseUrl === "") {
      throw new TypeError("baseUrl must be a non-empty string");
    }
    this.baseUrl = config.baseUrl.replace(/\/+$/, "");
    if (config.fetch === undefined && typeof globalThis.fetch !== "function") throw new TypeError("no fetch implementation available");
    // The global fetch is called as a plain function: browsers refuse it with another `this`.
    this.fetchImpl = config.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.maxRetries = Math.max(0, Math.floor(config.maxRetries ?? DEFAULT_MAX_RETRIES));
    this.timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.sleep = config.sleep ?? defaultSleep;
    this.baseDelayMs = config.retryBaseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.maxDelayMs = config.retryMaxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    this.defaultHeaders = { ...(config.headers ?? {}) };
    this.refreshOnUnauthenticated = config.refreshOnUnauthenticated ?? false;
    this.maxRetryAfterSeconds = config.maxRetryAfterSeconds ?? DEFAULT_MAX_RETRY_AFTER_SECONDS;
    this.idempotencyKeys = config.idempotencyKeys ?? true;
    this.tokenSource = config.token;
  }

  /** Replaces the token source (e.g. after an operator login). */
  setToken(token: TokenSource | undefined): void {
    this.tokenSource = token;
  }

  /** Resolves the current bearer token (undefined when there is none). */
  async token(refresh = false, refused?: string): Promise<string | undefined> {
    const src = this.tokenSource;
    if (src === undefined) return undefined;
    if (typeof src === "string") return src;
    return src({ refresh, refused });
  }

  /** Throwing, retrying JSON call; resolves with the parsed body (undefined for 204/empty). */
  async call<T>(spec: CallSpec): Promise<T> {
    const res = await this.send<T>(spec);
    return res.body;
  }

  /**
   * Throwing, retrying request that resolves with the whole answer. 2xx, 304 and `okStatuses`
   * are success; anything else throws `FeedsApiError`.
   */
  async send<T>(callSpec: CallSpec): Promise<RawResponse<T>> {
    const maxRetries = Math.max(0, Math.floor(callSpec.maxRetries ?? this.maxRetries));
    const spec = withIdempotencyKey(callSpec, callSpec.idempotencyKey ?? (this.idempotencyKeys ? undefined : false));
    const retrySafe = isRetrySafe(spec);
    const canRefresh =
      this.refreshOnUnauthenticated &&
      typeof this.tokenSource === "function" &&
      (spec.auth === undefined || spec.auth === true);
    let refreshed = false;
    let refreshNext = false;
    let retries = 0;
    const sent: { token?: string | undefined } = {};
    for (;;) {
      let error: FeedsApiError;
      try {
        const res = await this.attempt(spec, refreshNext, sent);
        refreshNext = false;
        if (
          (res.status >= 200 && res.status < 300) ||
          res.status === 304 ||
          spec.okStatuses?.includes(res.status)
        ) {
          return res as RawResponse<T>;
        }
        error = FeedsApiError.fromResponse({
          status: res.status,
          headers: res.headers,
          bodyText: res.text,
          url: res.url,
          method: spec.method,
        });
      } catch (e) {
        if (!(e instanceof FeedsApiError)) throw e;
        if (spec.signal?.aborted) throw spec.signal.reason as Error;
        refreshNext = false;
        error = e;
      }
      if (error.code === ErrorCodes.UNAUTHENTICATED && canRefresh && !refreshed) {
        refreshed = true;
        refreshNext = true;
        continue;
      }
      if (!error.retryable || !retrySafe || retries >= maxRetries) throw error;
      const wait = error.retryAfterSeconds;
      if (wait !== undefined && wait > this.maxRetryAfterSeconds) throw error;
      const delayMs = wait !== undefined ? Math.round(wait * 1000) : backoffDelay(retries, this.baseDelayMs, this.maxDelayMs);
      retries += 1;
      await abortableSleep(this.sleep, delayMs, spec.signal);
    }
  }

  /**
   * A GET whose answer is read as it arrives (the live stream): no credentials, no timeout, no
   * retry; the Response is the caller's to read or cancel.
   */
  async openStream(path: string, query: Query, signal?: AbortSignal): Promise<Response> {
    const url = buildUrl(this.baseUrl, path, query);
    try {
      return await this.fetchImpl(url, { method: "GET", headers: { accept: "text/event-stream", ...this.defaultHeaders }, ...(signal ? { signal } : {}) });
    } catch (cause) {
      if (signal?.aborted) throw signal.reason as Error;
      throw FeedsApiError.network(url, cause, "GET");
    }
  }

  /** One attempt, no retry; never throws for an HTTP answer (network failures still throw). */
  async raw<T = unknown>(spec: RequestSpec): Promise<RawResponse<T>> {
    return (await this.attempt(spec, false, {})) as RawResponse<T>;
  }

  /** One request; `sent.token` is the bearer token it carried, and the one a refresh replaces. */
  private async attempt(spec: RequestSpec, refresh: boolean, sent: { token?: string | undefined }): Promise<RawResponse> {
    const url = buildUrl(this.baseUrl, spec.path, spec.query);
    const headers: Record<string, string> = { accept: "application/json", ...this.defaultHeaders };
    for (const [k, v] of Object.entries(spec.headers ?? {})) {
      if (v !== undefined) headers[k] = v;
    }
    if (!hasHeader(headers, "authorization") && spec.auth !== false) {
      const token = typeof spec.auth === "string" ? spec.auth : await this.token(refresh, refresh ? sent.token : undefined);
      sent.token = token;
      if (token !== undefined) headers["authorization"] = `Bearer ${token}`;
    }
    let body: string | Uint8Array | undefined;
    if (spec.body !== undefined) {
      body =
        typeof spec.body === "string" || spec.body instanceof Uint8Array
          ? spec.body
          : JSON.stringify(spec.body);
      if (!hasHeader(headers, "content-type")) headers["content-type"] = "application/json";
    }
    const init: RequestInit = { method: spec.method, headers };
    if (body !== undefined) init.body = body;
    const signals = [spec.signal, this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : undefined].filter(
      (x): x is AbortSignal => x !== undefined,
    );
    if (signals.length) init.signal = signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    try {
      const res = await this.fetchImpl(url, init);
      const text = await res.text();
      return {
        status: res.status,
        ok: res.status >= 200 && res.status < 300,
        headers: res.headers,
        body: parseBody(text),
        text,
        url,
      };
    } catch (cause) {
      if (spec.signal?.aborted) throw spec.signal.reason as Error;
      throw FeedsApiError.network(url, cause, spec.method);
    }
  }
}
