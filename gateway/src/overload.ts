import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import { FeedsError } from "@feeds/kit";

// Overload shedding: when the gateway cannot serve quickly, a request is answered 429
// RATE_LIMITED with Retry-After (interface section 7: the one retryable "wait" code; a 503 would
// reach clients as INTERNAL) instead of joining a queue that only grows. A request is admitted
// once its body is read and its caller authenticated (a client that stalls its body, or sends no
// valid credential, holds no slot), and the route's handler says when (define.ts). Each limit is
// off at 0:
// - `maxInFlight` requests execute at once; up to `maxQueue` more wait their turn in order, so a
//   burst is served, not shed. Past that a request is shed at once, and a waiter still waiting
//   after `maxQueueWaitMs` is shed then. Once the queue overflowed, no request waits until it has
//   been quiet for a second: under sustained overload requests are served at once or shed;
// - a route's standing latency: at least QUEUE of its requests have executed longer than
//   `maxLatencyMs` (writes queued on the database while warm reads still answer in ms). Its new
//   requests are shed while that holds, re-tested every window. Routes that are slow by design
//   (batch imports, operator and admin) are not tested;
// - the event loop's mean delay over the last window above `maxEventLoopDelayMs` (the process is
//   too busy to read its sockets) while requests of its own are executing: a delay with none
//   executing (one costly request that has finished, a host starved by other processes) leaves
//   nothing that shedding would spare, so the next request is served; or the V8 heap above
//   `maxHeapPercent` of its limit.
// A request that would be shed anyway (saturated) is shed as it arrives, before its body and
// caller cost anything. Health, readiness and long-lived streams are never admitted here, so
// never shed.

export interface OverloadOptions {
  maxLatencyMs: number;
  maxInFlight: number;
  maxQueueWaitMs: number;
  maxQueue: number;
  maxEventLoopDelayMs: number;
  maxHeapPercent: number;
  retryAfterSeconds: number;
  /** The window of the latency, event-loop and heap tests (milliseconds). */
  windowMs?: number;
}

/**
 * Requests of a route executing past the limit that make a queue: more than a client sending
 * waves of a few requests at a time keeps there.
 */
const QUEUE = 8;
/** How long after the queue overflowed (or a waiter timed out) requests are not queued. */
const QUIET_MS = 1000;

interface RouteState {
  queued: boolean;
  /** Executing requests of the route → when each started. */
  started: Map<number, number>;
}

interface Waiter {
  start(): void;
  timer: NodeJS.Timeout;
}

export function createOverloadGuard(o: OverloadOptions) {
  let inFlight = 0;
  let shed = 0;
  let loopBusy = false;
  let heapFull = false;
  let seq = 0;
  const waiters: Waiter[] = [];
  const routes = new Map<string, RouteState>();
  const loop = o.maxEventLoopDelayMs > 0 ? monitorEventLoopDelay({ resolution: 10 }) : null;
  loop?.enable();
  const heapLimit = getHeapStatistics().heap_size_limit;
  const timer = setInterval(() => {
    loopBusy = loop ? loop.mean / 1e6 > o.maxEventLoopDelayMs : false;
    loop?.reset();
    heapFull = o.maxHeapPercent > 0 && (process.memoryUsage().heapUsed / heapLimit) * 100 > o.maxHeapPercent;
    const now = performance.now();
    for (const r of routes.values()) {
      let waiting = 0;
      for (const t0 of r.started.values()) if (now - t0 > o.maxLatencyMs) waiting++;
      r.queued = waiting >= QUEUE;
    }
  }, o.windowMs ?? 250);
  timer.unref();

  const busyError = (): FeedsError => {
    shed++;
    return new FeedsError("RATE_LIMITED", "server busy, retry after the wait", [], { retryAfterSeconds: o.retryAfterSeconds });
  };
  const busy = () => heapFull || (loopBusy && inFlight > 0);
  const refuse = (): never => {
    throw busyError();
  };
  // A queue that overflowed is standing, not a burst: arrivals outpace answers. Until it has been
  // quiet for QUIET_MS no new request waits (each is served at once or shed), so the wait of
  // those served stays short under sustained overload; a burst on a quiet process still queues.
  let overflowedAt = -Infinity;
  const queueRoom = () => (performance.now() - overflowedAt < QUIET_MS ? 0 : o.maxQueue);
  const slotsTaken = () => o.maxInFlight > 0 && inFlight >= o.maxInFlight;
  const queueFull = () => waiters.length >= queueRoom();
  const overflow = (): never => {
    overflowedAt = performance.now();
    return refuse();
  };

  /** Hands a freed slot to the oldest waiter (the slot passes at once: no arrival takes it). */
  function next(): void {
    const w = waiters.shift();
    if (!w) return;
    clearTimeout(w.timer);
    inFlight++;
    w.start();
  }

  return {
    /**
     * Admits one request of `route` (its method and URL template) or throws the 429; resolves
     * with its release once it may execute. `tested`: whether its latency is tested.
     */
    async admit(route: string, tested: boolean): Promise<() => void> {
      let r = routes.get(route);
      if (!r) routes.set(route, (r = { queued: false, started: new Map() }));
      const state = r;
      if (busy() || (o.maxLatencyMs > 0 && tested && state.queued && state.started.size >= QUEUE)) refuse();
      const full = slotsTaken();
      if (full && queueFull()) overflow();
      const id = seq++;
      if (full) {
        await new Promise<void>((resolve, reject) => {
          const w: Waiter = {
            start: resolve,
            timer: setTimeout(() => {
              waiters.splice(waiters.indexOf(w), 1);
              overflowedAt = performance.now();
              reject(busyError());
            }, o.maxQueueWaitMs),
          };
          waiters.push(w);
        });
      } else {
        inFlight++;
      }
      state.started.set(id, performance.now());
      let released = false;
      return () => {
        if (released) return;
        released = true;
        inFlight--;
        state.started.delete(id);
        next();
      };
    },
    /**
     * Whether a request would be shed now whatever its route: the process is busy, or every slot
     * and place in the queue is taken. Checked as a request arrives, before its body and caller,
     * so that shedding under overload costs almost nothing; a request is still admitted only after
     * both (`admit`), so connections that stall their bodies never fill the queue.
     */
    saturated: () => busy() || (slotsTaken() && queueFull()),
    /** The 429 of a request shed as it arrives (counted as shed). */
    refusal: busyError,
    inFlight: () => inFlight,
    queued: () => waiters.length,
    shed: () => shed,
    close(): void {
      clearInterval(timer);
      loop?.disable();
    },
  };
}

export type OverloadGuard = ReturnType<typeof createOverloadGuard>;
