import type { z } from "zod";
import type { CallSpec, HttpClient, HttpOptions, Query, RawResponse, RequestSpec } from "./http.js";
import { checkAnswer, pathOf, type RouteAnswer, type RouteAnswerAt, type RouteDef } from "@feeds/contract";
import { healthRoutes } from "@feeds/contract";
import type { Health, Page, PageParams, QueueDepth, QueueName, Readiness, SignalResult } from "@feeds/contract";

// What every client shares: feed refs, paging, token minting, and BaseClient, which calls the
// routes of the route table (routes.ts) and answers the health routes.

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
 * Iterates every item of a paged list: `for await (const a of paginate((next) =>
 * client.readFeed("user:1", { next })))`.
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

/**
 * Caches a minted token; re-mints when it is close to expiry or when asked to.
 *
 * With `laterIatOnRefresh`, a forced re-mint (the server refused the token) first waits for the
 * next whole second and uses it as `iat`: token revocation compares the second-precision `iat`
 * with `revoked_before` (millisecond precision), so a token minted in the same second as the
 * revocation would be refused again. Waiting (at most one second, through the client's `sleep`)
 * keeps `iat` honest (never in the future) and later than any revocation the server had already
 * applied when it refused the old token, as long as the two clocks agree.
 */
export class MintedToken {
  private token: string | undefined;
  private refreshAtMs = 0;

  constructor(
    private readonly mint: (issuedAtSeconds: number | undefined) => Promise<string>,
    private readonly lifetimeSeconds: number | undefined,
    private readonly laterIatOnRefresh?: { sleep: (ms: number) => Promise<void> },
  ) {}

  async get(forceRefresh: boolean): Promise<string> {
    if (!forceRefresh && this.token !== undefined && Date.now() < this.refreshAtMs) {
      return this.token;
    }
    let issuedAt: number | undefined;
    if (forceRefresh && this.laterIatOnRefresh) {
      const now = Date.now();
      issuedAt = Math.ceil(now / 1000);
      const waitMs = issuedAt * 1000 - now;
      if (waitMs > 0) await this.laterIatOnRefresh.sleep(waitMs);
    }
    const mintedAt = Date.now();
    const token = await this.mint(issuedAt);
    this.token = token;
    if (this.lifetimeSeconds === undefined) {
      this.refreshAtMs = Number.POSITIVE_INFINITY;
    } else {
      const marginSeconds = Math.min(60, this.lifetimeSeconds * 0.2);
      this.refreshAtMs = mintedAt + (this.lifetimeSeconds - marginSeconds) * 1000;
    }
    return token;
  }
}

export interface ClientOptions extends HttpOptions {
  /** e.g. `http://127.0.0.1:8080` (no trailing `/v1`). */
  baseUrl: string;
  /**
   * Check every answer against its route's response schema: a status the route declares, a body
   * the schema accepts and no field it does not name; otherwise throw ResponseValidationError.
   * Default false (answers are typed, not checked).
   */
  validateResponses?: boolean | undefined;
}


/** What a method hands to its route: path parameters, query, body, extra headers. */
export interface RouteInput {
  params?: Readonly<Record<string, string | number>>;
  query?: Query;
  body?: unknown;
  headers?: Record<string, string | undefined>;
}

// ---------------------------------------------------------------------------------------------
// Base: raw access, the route caller and the unauthenticated health routes
// ---------------------------------------------------------------------------------------------

export abstract class BaseClient {
  protected readonly http: HttpClient;
  private readonly validateResponses: boolean;

  protected constructor(http: HttpClient, options: Pick<ClientOptions, "validateResponses">) {
    this.http = http;
    this.validateResponses = options.validateResponses ?? false;
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
  protected async send<R extends RouteDef>(def: R, input: RouteInput = {}): Promise<RawResponse<RouteAnswer<R>>> {
    const res = await this.http.send<RouteAnswer<R>>({
      method: def.method,
      path: pathOf(def, input.params),
      query: input.query,
      body: input.body,
      headers: input.headers,
      auth: def.auth === "none" ? false : undefined,
      okStatuses: Object.keys(def.responses).map(Number).filter((s) => s >= 300 && s !== 304),
    });
    if (this.validateResponses) checkAnswer(def, res.status, res.body);
    return res;
  }

  /** One route of the table; resolves its answer's body. */
  protected async route<R extends RouteDef>(def: R, input: RouteInput = {}): Promise<RouteAnswer<R>> {
    return (await this.send(def, input)).body;
  }

  /** A change signal: `etag` goes out as If-None-Match; 304 → notModified. */
  protected async signalOf<R extends RouteDef & { responses: { 200: z.ZodType; 304: null } }>(
    def: R,
    input: RouteInput,
    etag: string | undefined,
  ): Promise<SignalResult<RouteAnswerAt<R, 200>>> {
    const res = await this.send(def, { ...input, headers: { "if-none-match": etag } });
    const tag = res.headers.get("etag");
    if (res.status === 304) return { notModified: true, etag: tag ?? etag ?? null };
    return { notModified: false, etag: tag, body: res.body as RouteAnswerAt<R, 200> };
  }

  // Health and monitoring (unauthenticated; no token is sent).

  /** `GET /v1/health` */
  health(): Promise<Health> {
    return this.route(healthRoutes.health);
  }

  /**
   * `GET /v1/health/ready`. Resolves with the body for 200 AND for 503 (not ready, no retry):
   * check `checks[].ok`. Use `raw()` to see the HTTP status.
   */
  ready(): Promise<Readiness> {
    return this.route(healthRoutes.ready);
  }

  /** `GET /v1/health/queues/{fanout|notify|webhooks}` */
  queueDepth(queue: QueueName): Promise<QueueDepth> {
    return this.route(healthRoutes.queueDepth, { params: { queue } });
  }
}
