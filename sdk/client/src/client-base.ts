import type { CallOptions, CallSpec, HttpClient, HttpOptions, Query, RawResponse, RequestSpec } from "./http.js";
import { routeTable } from "@feeds/contract/routes";
import type { AnswerValidator, Health, Page, PageParams, QueueDepth, QueueName, Readiness, RouteAnswer, SignalResult } from "@feeds/contract";
import type { routes } from "@feeds/contract";

// What every client shares: feed refs, paging, and BaseClient, which calls the routes of the
// schema-free route table (@feeds/contract/routes) and answers the health routes. Answer types
// come from the zod table by a type-only import, so no schema reaches a bundle.

/** One route as plain data: verb, path template, who may call it, the statuses it answers. */
export interface PlainRoute {
  readonly method: string;
  readonly path: string;
  readonly auth: string;
  readonly statuses: readonly number[];
}
type Table = typeof routes;
type AnyDef = { [G in keyof Table]: Table[G][keyof Table[G]] }[keyof Table];
type DefOf<P extends PlainRoute> = Extract<AnyDef, { method: P["method"]; path: P["path"] }>;
/** What a route answers, from its zod definition (types only). */
export type AnswerOf<P extends PlainRoute> = RouteAnswer<DefOf<P>>;

/** The path of a route with its `{name}` placeholders filled in, each value URL-encoded. */
export function fillPath(def: PlainRoute, params: Readonly<Record<string, string | number>> = {}): string {
  return def.path.replace(/\{([A-Za-z_]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`${def.method} ${def.path}: missing path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
}

/** A feed: `"group:id"` or `{group, id}`. */
export type FeedRef = string | { group: string; id: string };

/** Splits a feed ref at its first colon. Throws a TypeError when it is not `group:id`. */
export function parseFeedRef(feed: FeedRef): { group: string; id: string } {
  if (typeof feed !== "string") {
    if (typeof feed?.group !== "string" || typeof feed.id !== "string" || !feed.group || !feed.id) {
      throw new TypeError("feed must be \"group:id\" or {group, id} with non-empty strings");
    }
    return { group: feed.group, id: feed.id };
  }
  const i = feed.indexOf(":");
  if (i <= 0 || i === feed.length - 1) {
    throw new TypeError(`feed ref "${feed}" must have the form "group:id"`);
  }
  return { group: feed.slice(0, i), id: feed.slice(i + 1) };
}

/** `"group:id"` of a feed ref. */
export function feedRefString(feed: FeedRef): string {
  const { group, id } = parseFeedRef(feed);
  return `${group}:${id}`;
}

/** The paging query of a paged method. */
export function pageQuery(params: PageParams | undefined): Query {
  return { limit: params?.limit, next: params?.next ?? undefined, cursor: params?.cursor };
}

/**
 * Iterates every item of a paged list, following `next` until the last page:
 * `for await (const a of paginate((next) => client.readFeed("user:1", { next })))`.
 * The clients' `all()`-style methods are built on it.
 */
export async function* paginate<T>(
  fetchPage: (next: string | undefined) => Promise<Page<T>>,
): AsyncGenerator<T, void, undefined> {
  let next: string | undefined;
  for (;;) {
    const page = await fetchPage(next);
    yield* page.results;
    if (page.next === null || page.next === undefined || page.next === "") return;
    next = page.next;
  }
}

export interface ClientOptions extends HttpOptions {
  /** e.g. `http://127.0.0.1:8080` (no trailing `/v1`). */
  baseUrl: string;
  /**
   * Checks every answer, only when given: pass `answerValidator()` of `@feeds/contract` (zod: a
   * status the route declares, a body the schema accepts, no field it does not name; throws
   * ResponseValidationError). Default: none (answers are typed, not checked), so a bundle that
   * does not ask carries no schema.
   */
  validateResponses?: AnswerValidator | undefined;
}


/** What a method hands to its route: path parameters, query, body, extra headers. */
export interface RouteInput {
  params?: Readonly<Record<string, string | number>>;
  query?: Query;
  body?: unknown;
  headers?: Record<string, string | undefined>;
  /** The caller's per-call options (signal, idempotencyKey). */
  call?: CallOptions | undefined;
}

const healthRoutes = routeTable.health;

// ---------------------------------------------------------------------------------------------
// Base: raw access, the route caller and the unauthenticated health routes
// ---------------------------------------------------------------------------------------------

export abstract class BaseClient {
  protected readonly http: HttpClient;
  private readonly validateAnswer: AnswerValidator | undefined;

  protected constructor(http: HttpClient, options: Pick<ClientOptions, "validateResponses">) {
    this.http = http;
    this.validateAnswer = options.validateResponses;
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** The bearer token this client would send now (minting one if needed). */
  async getToken(): Promise<string | undefined> {
    return this.http.token(false);
  }

  /**
   * Escape hatch: one request with this client's credentials (unless `auth` says otherwise),
   * no retry, never throws for an HTTP answer. Resolves `{status, ok, headers, body, text, url}`.
   */
  raw<T = unknown>(spec: RequestSpec): Promise<RawResponse<T>> {
    return this.http.raw<T>(spec);
  }

  /** Alias of `raw()`. */
  request<T = unknown>(spec: RequestSpec): Promise<RawResponse<T>> {
    return this.http.raw<T>(spec);
  }

  /** Any route with the usual behaviour (throws FeedsApiError, retry policy). */
  call<T = unknown>(spec: CallSpec): Promise<T> {
    return this.http.call<T>(spec);
  }

  /**
   * One route of the table, with the usual behaviour (throws FeedsApiError, retry policy). No
   * token goes to an unauthenticated route; a non-2xx status the route declares (readiness's
   * 503) is an answer, not an error.
   */
  protected async send<P extends PlainRoute>(def: P, input: RouteInput = {}): Promise<RawResponse<AnswerOf<P>>> {
    const res = await this.http.send<AnswerOf<P>>({
      method: def.method,
      path: fillPath(def, input.params),
      query: input.query,
      body: input.body,
      headers: input.headers,
      auth: def.auth === "none" ? false : undefined,
      okStatuses: def.statuses.filter((s) => s >= 300 && s !== 304),
      signal: input.call?.signal,
      idempotencyKey: input.call?.idempotencyKey,
    });
    this.validateAnswer?.(def, res.status, res.body);
    return res;
  }

  /** One route of the table; resolves its answer's body. */
  protected async route<P extends PlainRoute>(def: P, input: RouteInput = {}): Promise<AnswerOf<P>> {
    return (await this.send(def, input)).body;
  }

  /** A change signal: `etag` goes out as If-None-Match; 304 → notModified. */
  protected async signalOf<P extends PlainRoute>(
    def: P,
    input: RouteInput,
    etag: string | undefined,
  ): Promise<SignalResult<Exclude<AnswerOf<P>, undefined>>> {
    const res = await this.send(def, { ...input, headers: { "if-none-match": etag } });
    const tag = res.headers.get("etag");
    if (res.status === 304) return { notModified: true, etag: tag ?? etag ?? null };
    return { notModified: false, etag: tag, body: res.body as Exclude<AnswerOf<P>, undefined> };
  }

  // Health and monitoring (unauthenticated; no token is sent).

  /** `GET /v1/health` */
  health(call?: CallOptions): Promise<Health> {
    return this.route(healthRoutes.health, { call });
  }

  /**
   * `GET /v1/health/ready`. Resolves with the body for 200 AND for 503 (not ready, no retry):
   * check `checks[].ok`. Use `raw()` to see the HTTP status.
   */
  ready(call?: CallOptions): Promise<Readiness> {
    return this.route(healthRoutes.ready, { call });
  }

  /** `GET /v1/health/queues/{fanout|notify|webhooks}` */
  queueDepth(queue: QueueName, call?: CallOptions): Promise<QueueDepth> {
    return this.route(healthRoutes.queueDepth, { params: { queue }, call });
  }
}
