import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Client } from "@connectrpc/connect";
import { allowedOriginsVersionKey, type Logger, type RedisConn } from "@feeds/kit";
import type { Tenant, TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";

// CORS per tenant (docs/cors.md). A preflight carries no credentials, so it is answered from the
// union of the origins some tenant allows; an actual answer by the caller's own tenant once the
// request authenticated as one, and by the union when none could be established (a 401, a route
// without a credential: answers that carry no tenant's data, which a browser client must still
// read, to refresh its token or wait out a 429). Operator and admin routes are same-origin only:
// the console is served from the gateway's own origin. Every decision is made from memory.
//
// Hand-written rather than @fastify/cors: that plugin decides in a request hook, before the route
// has authenticated its caller, and the answer here depends on who the caller turned out to be.

/** How often each gateway reads the union's version stamp; a change applies within about this. */
export const ORIGINS_POLL_MS = 1000;
/** The union is read again this often even when its stamp did not move. */
const ORIGINS_FULL_RELOAD_MS = 60_000;
/** How long a browser may cache a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE_S = 600;

const allowMethods = "GET, POST, PUT, PATCH, DELETE";
const allowHeaders = "Authorization, Content-Type, If-None-Match, Idempotency-Key, Last-Event-ID, X-Request-Id";
const exposeHeaders = "ETag, Retry-After, X-Request-Id, Idempotent-Replayed, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset";

/** Paths answered to other origins at all: everything but the console's (/operator, /admin). */
export function crossOriginPath(url: string): boolean {
  let path = url;
  try {
    // As the router reads it: `/%6Fperator/…` is the console's too.
    path = decodeURIComponent(url);
  } catch {
    // Not decodable: the router answers it 400 or 404 anyway.
  }
  return !/^\/(operator|admin)(\/|\?|$)/.test(path);
}

/**
 * Every origin some tenant allows, held in memory: reloaded from tenancy when the Redis stamp
 * tenancy moves on each change (kit/src/redis-keys.ts) has moved, polled every ORIGINS_POLL_MS.
 * Until the first load answers, the set is empty: preflights are refused, nothing is allowed.
 */
export function createOriginUnion(deps: {
  tenancy: Pick<Client<typeof TenancyService>, "listAllowedOrigins">;
  redis: RedisConn;
  log: Logger;
  pollMs?: number;
}) {
  const { tenancy, redis, log } = deps;
  let origins: ReadonlySet<string> = new Set();
  let loadedUnder: string | null | undefined; // the stamp of the last load (undefined: none yet)
  let loadedAt = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  async function refresh(): Promise<void> {
    // The stamp is read before the set: a change after this read moves it, and the next poll reloads.
    const stamp = await redis.redis.get(allowedOriginsVersionKey(redis));
    if (loadedUnder !== undefined && stamp === loadedUnder && Date.now() - loadedAt < ORIGINS_FULL_RELOAD_MS) return;
    const res = await tenancy.listAllowedOrigins({});
    origins = new Set(res.origins);
    loadedUnder = stamp;
    loadedAt = Date.now();
  }

  function tick(): void {
    refresh()
      .catch((err: unknown) => log.warn({ err: String(err) }, "allowed origins not refreshed; the last set stays"))
      .finally(() => {
        if (!closed) timer = setTimeout(tick, deps.pollMs ?? ORIGINS_POLL_MS).unref();
      });
  }

  return {
    start: tick,
    has: (origin: string): boolean => origins.has(origin),
    close(): void {
      closed = true;
      clearTimeout(timer);
    },
  };
}

export type OriginUnion = ReturnType<typeof createOriginUnion>;

/** The tenant each request authenticated as (define.ts notes it): the actual answer's rule. */
const tenantOfRequest = new WeakMap<FastifyRequest, Tenant>();
/** The id of the tenant the request authenticated as, if any (the access log names it). */
export const requestTenantId = (req: FastifyRequest): string | undefined => tenantOfRequest.get(req)?.id;
export const noteCorsTenant = (req: FastifyRequest, tenant: Tenant): void => {
  tenantOfRequest.set(req, tenant);
};

/**
 * The CORS headers of an answer written outside Fastify's reply (the stream hijacks its reply,
 * so onSend does not run): the rule of onSend for a request that authenticated as `tenant`.
 */
export function corsHeadersOf(origin: string | undefined, tenant: Tenant): Record<string, string> {
  const h: Record<string, string> = { vary: "Origin" };
  if (origin && tenant.allowedOrigins.includes(origin)) {
    h["access-control-allow-origin"] = origin;
    h["access-control-expose-headers"] = exposeHeaders;
  }
  return h;
}

function varyOrigin(reply: FastifyReply): void {
  const vary = reply.getHeader("vary");
  const list = typeof vary === "string" ? vary : Array.isArray(vary) ? vary.join(", ") : "";
  if (!/(^|,)\s*origin\s*(,|$)/i.test(list)) reply.header("vary", list ? `${list}, Origin` : "Origin");
}

/** Answers preflights on every path and adds the CORS headers to every answer that may have them. */
export function installCors(app: FastifyInstance, union: OriginUnion): void {
  app.options("*", async (req, reply) => {
    const origin = req.headers.origin;
    if (crossOriginPath(req.url)) varyOrigin(reply);
    if (origin && req.headers["access-control-request-method"] && crossOriginPath(req.url) && union.has(origin)) {
      reply
        .header("access-control-allow-origin", origin)
        .header("access-control-allow-methods", allowMethods)
        .header("access-control-allow-headers", allowHeaders)
        .header("access-control-max-age", String(PREFLIGHT_MAX_AGE_S));
    }
    return reply.code(204).send();
  });

  app.addHook("onSend", async (req, reply, payload) => {
    // The matched route's pattern when there is one: an encoded path cannot pass for another.
    if (req.method === "OPTIONS" || !crossOriginPath(req.routeOptions.url ?? req.url)) return payload;
    varyOrigin(reply);
    const origin = req.headers.origin;
    if (!origin) return payload;
    const tenant = tenantOfRequest.get(req);
    if (tenant ? tenant.allowedOrigins.includes(origin) : union.has(origin)) {
      reply.header("access-control-allow-origin", origin).header("access-control-expose-headers", exposeHeaders);
    }
    return payload;
  });
}
