import Fastify, { type FastifyInstance } from "fastify";
import { type Clients, type Config, type Logger, type Mongo, type Nats, type RedisConn } from "@feeds/kit";
import { createTenantAuthenticator } from "./auth.js";
import { operations } from "@feeds/contract";
import { createRouteTable } from "./define.js";
import { openApiDocument } from "./openapi/document.js";
import { createOriginUnion, installCors, requestTenantId } from "./cors.js";
import { installAccessLog, installErrorHandling, installRequestIds, installTraceNames, serverOptions } from "./http.js";
import { createIdempotency } from "./idempotency.js";
import { installHttpMetrics } from "./http-metrics.js";
import { createOverloadGuard } from "./overload.js";
import { createAuthFailureBudget } from "./auth-failures.js";
import { createRateLimiter } from "./rate-limit.js";
import { adminRoutes } from "./routes/admin.js";
import { healthRoutes } from "./routes/health.js";
import { operatorRoutes } from "./routes/operator.js";
import { userRoutes } from "./routes/users.js";
import { feedRoutes } from "./routes/feeds.js";
import { graphRoutes } from "./routes/graph.js";
import { objectRoutes } from "./routes/objects.js";
import { promotedRoutes } from "./routes/promoted.js";
import { batchActivityRoutes } from "./routes/batch-activities.js";
import { notificationRoutes } from "./routes/notifications.js";
import { webhookRoutes } from "./routes/webhooks.js";
import { engagementRoutes } from "./routes/engagement.js";
import { originRoutes } from "./routes/origins.js";
import { streamRoutes } from "./routes/stream.js";
import { createLiveHub } from "./stream/hub.js";
import { createStreamSlots } from "./stream/slots.js";
import { createTickets } from "./stream/tickets.js";
import { installConsole } from "./console.js";

export interface GatewayDeps {
  config: Config;
  log: Logger;
  clients: Clients;
  mongo: Mongo;
  redis: RedisConn;
  nats: Nats;
}

/** The edge: the interface's HTTP/JSON contract in front of the services, reached through `clients`. */
export async function buildGateway(deps: GatewayDeps): Promise<FastifyInstance> {
  const { config, log, clients } = deps;
  const app = Fastify(serverOptions(config, log));
  installRequestIds(app);
  installAccessLog(app, log, requestTenantId);
  installTraceNames(app);
  installErrorHandling(app, log);
  installHttpMetrics(app);
  const overload = createOverloadGuard({
    maxLatencyMs: config.OVERLOAD_MAX_LATENCY_MS,
    maxInFlight: config.OVERLOAD_MAX_IN_FLIGHT,
    maxQueueWaitMs: config.OVERLOAD_MAX_QUEUE_WAIT_MS,
    maxQueue: config.OVERLOAD_MAX_QUEUE,
    maxEventLoopDelayMs: config.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS,
    maxHeapPercent: config.OVERLOAD_MAX_HEAP_PERCENT,
    retryAfterSeconds: config.OVERLOAD_RETRY_AFTER_SECONDS,
  });
  app.addHook("onClose", async () => overload.close());

  // Each part gets the clients it calls and no others.
  const { tenancy, users, operators, feed, promoted, graph, catalog, engagement, notification, webhooks, health } = clients;
  const limiter = createRateLimiter(deps.redis);
  const failures = createAuthFailureBudget(limiter, config.AUTH_FAILURE_LIMIT_PER_MINUTE);
  const tenantAuth = createTenantAuthenticator({ clients: { tenancy, users }, redis: deps.redis, limiter, failures, config });
  const idempotency = createIdempotency(app, deps.redis, config, log);
  const routes = createRouteTable(app, { clients: { operators }, tenantAuth, failures, overload, idempotency });
  const origins = createOriginUnion({ tenancy, redis: deps.redis, log });
  installCors(app, origins);
  origins.start();
  app.addHook("onClose", async () => origins.close());

  healthRoutes(routes, { ...deps, clients: { health } });
  userRoutes(routes, { users });
  operatorRoutes(routes, { tenancy, operators, users, feed, webhooks }, limiter, config);
  adminRoutes(routes, { tenancy, operators }, deps.nats);
  feedRoutes(routes, { feed, promoted, users, catalog, engagement });
  graphRoutes(routes, { graph });
  objectRoutes(routes, { catalog });
  promotedRoutes(routes, { promoted });
  batchActivityRoutes(routes, { feed });
  notificationRoutes(routes, { notification });
  webhookRoutes(routes, { webhooks });
  engagementRoutes(routes, { engagement });
  originRoutes(routes, { tenancy });
  const hub = createLiveHub({
    nats: deps.nats,
    users,
    log,
    settings: { windowMs: config.STREAM_REPLAY_WINDOW_MS, eventsPerFeed: config.STREAM_REPLAY_EVENTS_PER_FEED },
  });
  await hub.start();
  app.addHook("onClose", async () => hub.stop());
  streamRoutes(app, routes, { hub, tickets: createTickets(deps.redis), slots: createStreamSlots(deps.redis), redis: deps.redis, nats: deps.nats, log, config });

  // One handler per route of the table: a route left out stops the boot here.
  routes.assertServes(operations);
  // The committed docs/openapi.json with this gateway as its server (rendered once, on first ask).
  let doc: ReturnType<typeof openApiDocument> | undefined;
  app.get("/openapi.json", async () => (doc ??= openApiDocument(operations, { serverUrl: config.PUBLIC_URL ?? "/" })));
  // The operator console's built files (not API routes: outside the route table and the document).
  installConsole(app, log);
  await app.ready();
  return app;
}
