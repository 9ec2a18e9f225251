import { METHODS } from "node:http";
import type { FastifyInstance } from "fastify";
import { processMetrics } from "@feeds/kit";

// Every answer of the gateway into feeds_http_request_duration_seconds, labelled by the route's
// template (never the raw URL: a request matching no route is `unmatched`), method and status.
// The labelled series is looked up once per route, method and status and kept.

export const UNMATCHED_ROUTE = "unmatched";
const KNOWN_METHODS = new Set(METHODS);

export function installHttpMetrics(app: FastifyInstance, histogram = processMetrics().httpDuration): void {
  const series = new Map<string, ReturnType<typeof histogram.labels>>();
  app.addHook("onResponse", (req, reply, done) => {
    const route = req.routeOptions.url ?? UNMATCHED_ROUTE;
    const method = KNOWN_METHODS.has(req.method) ? req.method : "OTHER";
    const status = reply.statusCode;
    const key = `${status} ${method} ${route}`;
    let s = series.get(key);
    if (!s) series.set(key, (s = histogram.labels({ route, method, status_code: String(status) })));
    s.observe(reply.elapsedTime / 1000);
    done();
  });
}
