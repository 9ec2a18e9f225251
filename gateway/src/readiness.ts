import { HealthCheckResponse_ServingStatus } from "@feeds/proto/grpc/health/v1/health";
import { cachedRead, createWorkerBeats, within, registerScrapedGauge, serviceNames, workerNames, type Clients, type Config, type Logger, type Metrics, type Mongo, type Nats, type RedisConn } from "@feeds/kit";

// Readiness of every dependency, service and worker: what `/v1/health/ready` answers and what
// the gateway's metrics export as feeds_readiness_check{check} (1 passing, 0 failing).

export interface ReadinessDeps {
  config: Config;
  clients: Pick<Clients, "health">;
  mongo: Mongo;
  redis: RedisConn;
  nats: Nats;
}

export function createReadiness(deps: ReadinessDeps) {
  const { config, clients } = deps;
  const ms = config.READY_CHECK_TIMEOUT_MS;
  const beats = createWorkerBeats(deps.redis);
  const checks: { name: string; run: () => Promise<unknown> }[] = [
    { name: "mongodb", run: () => deps.mongo.db.command({ ping: 1 }) },
    { name: "nats", run: () => deps.nats.nc.flush() },
    { name: "redis", run: () => deps.redis.redis.ping() },
    ...serviceNames.map((n) => ({
      name: n,
      run: async () => {
        const res = await clients.health[n].check({ service: "" }, { timeoutMs: ms });
        if (res.status !== HealthCheckResponse_ServingStatus.SERVING) throw new Error("not serving");
      },
    })),
  ];
  // A worker whose every consumer loop stopped beating (crashed, stopped). Asked only while NATS
  // (what they consume) and Redis (where they beat) answer: otherwise that dependency is the news.
  const workerChecks = workerNames.map((w) => ({
    name: `worker:${w}`,
    run: async () => {
      if (!(await beats.alive(w))) throw new Error("no live consumer");
    },
  }));
  const runAll = (list: typeof checks) =>
    Promise.all(list.map(async (c) => ({ name: c.name, ok: await within(ms, c.run()).then(() => true, () => false) })));

  const check = async (): Promise<{ ok: boolean; checks: { name: string; ok: boolean }[] }> => {
    const results = await runAll(checks);
    if (results.every((c) => c.ok || (c.name !== "nats" && c.name !== "redis"))) results.push(...(await runAll(workerChecks)));
    return { ok: results.every((c) => c.ok), checks: results };
  };
  // This process's own readiness (GET /readyz on the metrics port, what Kubernetes routes by): what
  // its routes need to answer, Redis and the services, not the workers (a worker that stopped
  // must not take every gateway out of its Service).
  const own = checks.filter((c) => c.name === "redis" || (serviceNames as readonly string[]).includes(c.name));
  const checkOwn = async () => {
    const results = await runAll(own);
    return { ok: results.every((c) => c.ok), checks: results };
  };
  return {
    /** Redis and the seven services, shared by all callers for READY_CACHE_MS. */
    checkOwn: cachedRead(checkOwn, config.READY_CACHE_MS),
    /**
     * Every check, shared by all callers for READY_CACHE_MS from when it started: readiness
     * costs the same however many ask, and a dependency that dies is noticed within
     * READY_CACHE_MS + READY_CHECK_TIMEOUT_MS (at most 2 s, kit's config).
     */
    check: cachedRead(check, config.READY_CACHE_MS),
  };
}

export type Readiness = ReturnType<typeof createReadiness>;

/** feeds_readiness_check{check}, run when scraped (at most once per `maxAgeMs`). */
export function registerReadinessGauge(metrics: Metrics, readiness: Readiness, log: Logger, opts: { maxAgeMs?: number } = {}): void {
  registerScrapedGauge(
    metrics,
    {
      name: "feeds_readiness_check",
      help: "Readiness checks as /v1/health/ready runs them: 1 passing, 0 failing (worker checks only while NATS and Redis answer)",
      labelNames: ["check"],
    },
    cachedRead(() => readiness.check(), opts.maxAgeMs ?? 5000),
    (r) => r.checks.map((c) => [{ check: c.name }, c.ok ? 1 : 0]),
    (err) => log.warn({ err: String(err) }, "readiness unavailable for metrics"),
  );
}
