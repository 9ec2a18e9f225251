import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import type { FastifyInstance } from "fastify";
import { FeedsError } from "@feeds/kit";
import { sendError } from "./http.js";

// Overload shedding: when the gateway cannot serve quickly, a new request is answered at once with
// 429 RATE_LIMITED and Retry-After (interface section 7: the one retryable "wait" code; a 503
// would reach clients as INTERNAL) instead of joining a queue that only grows. Three signals,
// each off at 0:
// - a route's standing queue (CoDel's test): over the last window even the quickest answer of the
//   route took longer than `maxLatencyMs` while several of its requests were in flight, so they
//   wait behind each other (writes queued on the database while warm reads, another route, still
//   answer in milliseconds). Its new requests are shed while that holds: until a window whose
//   quickest answer is under the limit, or fewer than QUEUE of its requests in flight (a burst of
//   slow requests sent at once, as a test does, is admitted whole). Answers of 500 and above do
//   not count: an outage fails requests with INTERNAL as the contract says, it is not shed. Batch
//   imports (their time is their size) and the operator and admin routes (slow by design:
//   password hashing, provisioning) are exempt;
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
 * Requests of a route in flight at once from which slow answers mean a queue: more than a client
 * sending waves of a few requests at a time keeps there (such a client cannot overload anything;
 * an open stream of requests the route cannot keep up with passes it soon).
 */
const QUEUE = 8;
const latencyTested = (url: string) => url.startsWith("/v1/") && !url.startsWith("/v1/batch/");

interface RouteState {
  inFlight: number;
  answered: number;
  quickestMs: number;
  queued: boolean;
  tested: boolean;
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
      if (r.answered) r.queued = r.quickestMs > o.maxLatencyMs && r.inFlight >= QUEUE;
      else if (r.inFlight < QUEUE) r.queued = false;
      r.answered = 0;
      r.quickestMs = Infinity;
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
    if (!route) routes.set(key, (route = { inFlight: 0, answered: 0, quickestMs: Infinity, queued: false, tested: latencyTested(req.url) }));
    const queued = o.maxLatencyMs > 0 && route.tested && route.queued && route.inFlight >= QUEUE;
    if (queued || loopBusy || (o.maxInFlight > 0 && inFlight >= o.maxInFlight)) {
      shed++;
      // No done(): the answer is sent here and nothing else of the request runs.
      sendError(reply, req.id, new FeedsError("RATE_LIMITED", "server busy, retry after the wait", [], { retryAfterSeconds: o.retryAfterSeconds }));
      return;
    }
    inFlight++;
    route.inFlight++;
    const r = route;
    const t0 = performance.now();
    // "close" comes after the answer is written, and also when the client went away first.
    reply.raw.once("close", () => {
      inFlight--;
      r.inFlight--;
      if (reply.statusCode >= 500) return;
      r.answered++;
      r.quickestMs = Math.min(r.quickestMs, performance.now() - t0);
    });
    done();
  });
  return { inFlight: () => inFlight, shed: () => shed };
}
