import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import type { FastifyInstance } from "fastify";
import { FeedsError } from "@feeds/kit";
import { sendError } from "./http.js";

// Overload shedding: when the gateway cannot serve quickly, a new request is answered at once with
// 429 RATE_LIMITED and Retry-After (interface section 7: the one retryable "wait" code; a 503
// would reach clients as INTERNAL) instead of joining a queue that only grows. Three signals,
// each off at 0:
// - a route's standing queue: at least QUEUE of its requests have been in flight longer than
//   `maxLatencyMs` (writes queued on the database while warm reads, another route, still answer
//   in milliseconds; a stall; cold reads waiting while the route's warm ones answer). Its new
//   requests are shed while that holds, re-tested every window. A burst of slow requests sent at
//   once, as a test does, is admitted whole; a client sending waves of fewer than QUEUE is never
//   shed. Batch imports (their time is their size) and the operator and admin routes (slow by
//   design: password hashing, provisioning) are exempt;
// - requests in flight over `maxInFlight`: a backstop bounding all admitted work;
// - event-loop delay over `maxEventLoopDelayMs` (the window's mean, as @fastify/under-pressure
//   measures it): the process is too busy to even read its sockets.
// Health and readiness are never shed (a busy process must look alive); /metrics has its own port.

export interface OverloadOptions {
  maxLatencyMs: number;
  maxInFlight: number;
  maxEventLoopDelayMs: number;
  retryAfterSeconds: number;
  /** The window of the latency and event-loop tests (milliseconds). */
  windowMs?: number;
}

export interface OverloadState {
  inFlight(): number;
  shed(): number;
}

const NEVER_SHED = "/v1/health";
/**
 * Requests of a route waiting past the limit that make a queue: more than a client sending waves
 * of a few requests at a time keeps there (such a client cannot overload anything; an open stream
 * of requests the route cannot keep up with passes it soon).
 */
const QUEUE = 8;
const latencyTested = (url: string) => url.startsWith("/v1/") && !url.startsWith("/v1/batch/");

interface RouteState {
  queued: boolean;
  tested: boolean;
  /** Request id → when it was admitted, of the route's requests in flight. */
  started: Map<string, number>;
}

export function installOverloadShedding(app: FastifyInstance, o: OverloadOptions): OverloadState {
  let inFlight = 0;
  let shed = 0;
  let loopBusy = false;
  const routes = new Map<string, RouteState>();
  const h = o.maxEventLoopDelayMs > 0 ? monitorEventLoopDelay({ resolution: 10 }) : null;
  h?.enable();
  const timer = setInterval(() => {
    if (h) {
      loopBusy = h.mean / 1e6 > o.maxEventLoopDelayMs;
      h.reset();
    }
    for (const r of routes.values()) {
      const now = performance.now();
      let waiting = 0;
      for (const t0 of r.started.values()) if (now - t0 > o.maxLatencyMs) waiting++;
      r.queued = waiting >= QUEUE;
    }
  }, o.windowMs ?? 250);
  timer.unref();
  app.addHook("onClose", (_app, done) => {
    clearInterval(timer);
    h?.disable();
    done();
  });

  app.addHook("onRequest", (req, reply, done) => {
    if (req.url.startsWith(NEVER_SHED)) return done();
    const key = `${req.method} ${req.routeOptions.url ?? ""}`;
    let route = routes.get(key);
    if (!route) routes.set(key, (route = { queued: false, tested: latencyTested(req.url), started: new Map() }));
    const queued = o.maxLatencyMs > 0 && route.tested && route.queued && route.started.size >= QUEUE;
    if (queued || loopBusy || (o.maxInFlight > 0 && inFlight >= o.maxInFlight)) {
      shed++;
      // No done(): the answer is sent here and nothing else of the request runs.
      sendError(reply, req.id, new FeedsError("RATE_LIMITED", "server busy, retry after the wait", [], { retryAfterSeconds: o.retryAfterSeconds }));
      return;
    }
    inFlight++;
    const started = route.started;
    started.set(req.id, performance.now());
    // "close" comes after the answer is written, and also when the client went away first.
    reply.raw.once("close", () => {
      inFlight--;
      started.delete(req.id);
    });
    done();
  });
  return { inFlight: () => inFlight, shed: () => shed };
}
