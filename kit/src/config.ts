import { z } from "zod";
import { parseTrustProxy } from "./trust-proxy.js";

// Every setting of the system, parsed once at boot; nothing else reads process.env.
// Defaults live here, units in the names or comments.
const flag = z
  .string()
  .optional()
  .transform((v) => v === "1" || v === "true" || v === "yes");

const url = z.string().min(1);

const key32 = z
  .string()
  .refine((v) => Buffer.from(v, "base64").length === 32, "must be 32 bytes of base64")
  .optional();

export const configSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default("127.0.0.1"),
  MONGO_URL: url.default("mongodb://127.0.0.1:27017/"),
  NATS_URL: url.default("nats://127.0.0.1:4222"),
  REDIS_URL: url.default("redis://127.0.0.1:6379"),
  // Connections per process to MongoDB. Kept modest: FerretDB v1's PostgreSQL pool stalls when
  // more concurrent writes arrive than it has connections.
  MONGO_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(20),
  // Names the MongoDB database and prefixes every NATS stream/subject and Redis key.
  FEEDS_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z0-9_]{1,48}$/, "letters, digits and _ only")
    .default("feeds"),
  BOOTSTRAP_STAFF_EMAIL: z.string().email().optional(),
  BOOTSTRAP_STAFF_PASSWORD: z.string().min(12).max(1024).optional(),
  WEBHOOK_ALLOW_PRIVATE: flag,
  // How the one-process system calls its own services: `direct` hands the messages to the
  // implementation behind the same interceptors (kit/src/direct-transport.ts); `router` runs
  // Connect's in-memory protocol (encode, frame, decode), as before, for comparison.
  IN_PROCESS_RPC: z.enum(["direct", "router"]).default("direct"),
  // Webhook delivery: each attempt's time limit (milliseconds), and the waits before the 2nd,
  // 3rd, ... attempt (milliseconds, comma-separated, ±25% jitter each); after the last wait's
  // attempt fails the delivery is dead-lettered. Default: 8 attempts over about 3.5 hours.
  WEBHOOK_ATTEMPT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .regex(/^\d{1,9}(,\d{1,9}){0,19}$/, "milliseconds, comma-separated (at most 20)")
    .default("5000,30000,120000,600000,1800000,3600000,7200000")
    .transform((v) => v.split(",").map(Number)),
  // Which X-Forwarded-For hops to believe: true, false (default), a hop count (1 behind one
  // proxy), or the proxies' addresses/CIDR ranges, comma-separated (kit/src/trust-proxy.ts).
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const parsed = parseTrustProxy(v);
      if ("value" in parsed) return parsed.value;
      ctx.addIssue({ code: "custom", message: parsed.error });
      return z.NEVER;
    }),
  LOGIN_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(10),
  // Ordinary per-tenant request rate when the tenant sets none (requests per minute).
  DEFAULT_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  // Separate window of every batch route (requests per minute per tenant).
  BATCH_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  // 32 bytes, base64: the key that encrypts tenant api secrets at rest (AES-256-GCM). Only the
  // process that runs tenancy is given it (requireMasterKey).
  FEEDS_MASTER_KEY: key32,
  // 32 bytes, base64: the key that encrypts webhook signing secrets at rest (AES-256-GCM). Only the
  // processes that run notification (its api and worker roles) are given it (requireWebhookKey).
  FEEDS_WEBHOOK_KEY: key32,
  // 32 bytes, base64: signs every service-to-service call (kit/src/internal-auth.ts). Every
  // process that serves or reaches a service over the network needs the same one.
  FEEDS_INTERNAL_KEY: key32,
  // Identifies the running build in /v1/health.
  BUILD_VERSION: z.string().default("dev"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  // Split mode: the gateway reaches each service over gRPC at these base URLs; unset = in process.
  TENANCY_URL: z.string().optional(),
  IDENTITY_URL: z.string().optional(),
  FEED_URL: z.string().optional(),
  GRAPH_URL: z.string().optional(),
  ENGAGEMENT_URL: z.string().optional(),
  NOTIFICATION_URL: z.string().optional(),
  CATALOG_URL: z.string().optional(),
  // Port of a standalone service process (services/<name>/dist/main.js).
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  // What a standalone service process runs: "all" its routes and its background work (queue
  // workers, relays, sweepers: ServiceModule.start); "api" the routes only; "worker" the
  // background work only, serving grpc.health.v1 alone. The Helm chart runs the fan-out, follow
  // and notify workers as Deployments of their own: feed, graph and notification as "api" and
  // "worker" processes.
  FEEDS_ROLE: z.enum(["all", "api", "worker"]).default("all"),
  // Prometheus `GET /metrics` of this process, on HOST, never the API port (0: any free port).
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  // Tenants with a label of their own in per-tenant metrics (the top ones by volume; the rest
  // count under `other`), so the series stay bounded whatever the number of tenants.
  METRICS_TOP_TENANTS: z.coerce.number().int().min(0).max(1000).default(10),
  // Operator session lifetime (seconds).
  SESSION_TTL_SECONDS: z.coerce.number().int().min(60).default(12 * 3600),
  // Readiness: each dependency check's own timeout (milliseconds).
  READY_CHECK_TIMEOUT_MS: z.coerce.number().int().min(50).default(1500),
  // Overload shedding at the gateway (gateway/src/overload.ts): past any limit a new request is
  // answered 429 RATE_LIMITED with Retry-After at once rather than queued; 0 turns a limit off.
  // Health and readiness are never shed.
  // How long a route's requests may wait (milliseconds): once 8 of them have been in flight
  // longer, the route has a queue, and its new requests are shed until that clears.
  OVERLOAD_MAX_LATENCY_MS: z.coerce.number().int().min(0).default(1000),
  // Requests being served at once, all routes, per gateway process. On a one-process system on
  // 2 cores, 32 kept bench 13's 150% round at 124% of capacity with every answer within 155 ms;
  // 64 let waits reach 3 s and 256 9 s (more requests in flight only queue on the database;
  // test/bench/shed-compare.mjs). A gateway in front of services on other machines may want more.
  OVERLOAD_MAX_IN_FLIGHT: z.coerce.number().int().min(0).default(32),
  // Mean event-loop delay over the last quarter second (milliseconds).
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: z.coerce.number().int().min(0).default(0),
  // The Retry-After of a shed request (seconds).
  OVERLOAD_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).max(3600).default(1),
});

export type Config = z.infer<typeof configSchema>;

/** The request-shape bounds the SDK and the gateway check (sdk/src/limits.ts). */
export { requestLimits } from "@feeds/sdk";

/** Fixed bounds the services hold whatever the deployment; docs/limits.md lists each for users. */
export const limits = {
  /** Comment blocklist: terms, characters of one term once trimmed, words across all terms. */
  blocklistTerms: 1000,
  blocklistTermChars: 100,
  blocklistWords: 5000,
  /** Distinct reaction kinds one activity may carry; also the most kinds a tenant may declare. */
  reactionKindsPerActivity: 25,
  /** Webhook deliveries of one tenant in flight at once in one notification worker process. */
  webhookDeliveriesPerTenant: 64,
} as const;

export const serviceNames = [
  "tenancy",
  "identity",
  "feed",
  "graph",
  "engagement",
  "notification",
  "catalog",
] as const;
export type ServiceName = (typeof serviceNames)[number];

/** The variable that names a service's gRPC base URL. */
export const serviceUrlVariable = (name: ServiceName): string => `${name.toUpperCase()}_URL`;

export function serviceUrl(config: Config, name: ServiceName): string | undefined {
  return config[serviceUrlVariable(name) as keyof Config] as string | undefined;
}

/** Where tenancy is built: its key, or a start-up failure that names the variable. */
export function requireMasterKey(config: Config): Buffer {
  if (!config.FEEDS_MASTER_KEY) throw new Error("invalid configuration:\n  FEEDS_MASTER_KEY: required where the tenancy service runs");
  return Buffer.from(config.FEEDS_MASTER_KEY, "base64");
}

/** Where notification is built: its key for webhook signing secrets, or a start-up failure that names the variable. */
export function requireWebhookKey(config: Config): Buffer {
  if (!config.FEEDS_WEBHOOK_KEY) throw new Error("invalid configuration:\n  FEEDS_WEBHOOK_KEY: required where the notification service runs");
  return Buffer.from(config.FEEDS_WEBHOOK_KEY, "base64");
}

/** Where calls cross the network: the shared internal key, or a start-up failure. */
export function requireInternalKey(config: Config): Buffer {
  if (!config.FEEDS_INTERNAL_KEY) {
    throw new Error("invalid configuration:\n  FEEDS_INTERNAL_KEY: required where services are served or reached over the network");
  }
  return Buffer.from(config.FEEDS_INTERNAL_KEY, "base64");
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
