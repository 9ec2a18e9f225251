import { z } from "zod";
import { requestLimits } from "@feeds/contract";
import { parseTrustProxy } from "./trust-proxy.js";
import { parseRedisUrl } from "./redis-url.js";

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

/** Every variable, before the rules that relate several of them (configSchema). */
export const configFields = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default("127.0.0.1"),
  MONGO_URL: url.default("mongodb://127.0.0.1:27017/"),
  // One server or several, comma-separated (the members of a NATS cluster): the client tries them
  // in turn and learns the cluster's other members from the one it reaches.
  NATS_URL: url.default("nats://127.0.0.1:4222"),
  // Replicas of every JetStream stream and consumer the system creates (docs/nats.md): 1 on a
  // single server, 3 (or 5) on a cluster so that a queue survives losing a server. A stream or
  // consumer that exists with another count is updated to this one at start-up.
  NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  // One Redis (redis://, rediss://) or a Redis Cluster by some of its nodes
  // (redis+cluster://host1:port,host2:port; rediss+cluster:// for TLS): kit/src/redis-url.ts.
  REDIS_URL: url.default("redis://127.0.0.1:6379").superRefine((v, ctx) => {
    const parsed = parseRedisUrl(v);
    if ("error" in parsed) ctx.addIssue({ code: "custom", message: parsed.error });
  }),
  // Connections per process to MongoDB. Kept modest: seven services and their workers share one
  // store, and the local store bounds the writes it runs at once (docs/storage.md).
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
  // Where clients reach the gateway (https://feeds.example.com, or with a path prefix), as the
  // served /openapi.json names its server; unset, the document names "/" (wherever it was served
  // from). An http(s) URL without query, fragment or credentials; a trailing slash is dropped.
  PUBLIC_URL: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      let u: URL;
      try {
        u = new URL(v);
      } catch {
        ctx.addIssue({ code: "custom", message: "must be an http(s) URL" });
        return z.NEVER;
      }
      if ((u.protocol !== "http:" && u.protocol !== "https:") || u.search || u.hash || u.username || u.password || v.length > 2048) {
        ctx.addIssue({ code: "custom", message: "must be an http(s) URL without query, fragment or credentials" });
        return z.NEVER;
      }
      return u.href.replace(/\/+$/, "");
    }),
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
  // 32 bytes, base64: the root every service key derives from (docs/service-auth.md). It signs as
  // any process, so only the one-process system and `npm run service-keys` are given it.
  FEEDS_INTERNAL_KEY: key32,
  // 32 bytes, base64: the key this process signs its calls with, as itself only
  // (FEEDS_SERVICE_KEY_<PROCESS> of `npm run service-keys`).
  FEEDS_SERVICE_KEY: key32,
  // The keys a service verifies its callers' tokens with: `<process>:<32 bytes base64>`,
  // comma-separated (FEEDS_CALLER_KEYS_<SERVICE> of `npm run service-keys`).
  FEEDS_CALLER_KEYS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const parsed = parseCallerKeys(v);
      if ("keys" in parsed) return parsed.keys;
      ctx.addIssue({ code: "custom", message: parsed.error });
      return z.NEVER;
    }),
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
  // Overload shedding at the gateway (gateway/src/overload.ts): a request is admitted once its
  // body is read and its caller authenticated; past a limit it is answered 429 RATE_LIMITED with
  // Retry-After rather than queued for long; 0 turns a limit off. Health, readiness and
  // long-lived streams are never shed.
  // Requests executing at once, all routes, per gateway process; the next ones wait their turn.
  // On a one-process system on 2 cores more requests executing at once only queue on the
  // database (test/bench/shed-compare.mjs). A gateway in front of services on other machines may
  // want more.
  OVERLOAD_MAX_IN_FLIGHT: z.coerce.number().int().min(0).default(32),
  // How long a request may wait for its turn (milliseconds) before it is shed.
  OVERLOAD_MAX_QUEUE_WAIT_MS: z.coerce.number().int().min(1).default(2000),
  // Requests waiting their turn, per gateway process: past it a request is shed at once, so that
  // under sustained overload those served wait about this many answers' time (a burst of up to
  // OVERLOAD_MAX_IN_FLIGHT + this many at once is served whole).
  OVERLOAD_MAX_QUEUE: z.coerce.number().int().min(0).default(64),
  // How long a route's requests may execute (milliseconds): once 8 of them have executed longer,
  // the route has a queue, and its new requests are shed until that clears.
  OVERLOAD_MAX_LATENCY_MS: z.coerce.number().int().min(0).default(1000),
  // Mean event-loop delay over the last quarter second (milliseconds): the process is too busy
  // to read its sockets. Sheds only while a request executes (a delay with none leaves nothing
  // to spare).
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: z.coerce.number().int().min(0).default(250),
  // V8 heap in use, percent of the heap's limit.
  OVERLOAD_MAX_HEAP_PERCENT: z.coerce.number().int().min(0).max(100).default(90),
  // The Retry-After of a shed request (seconds).
  OVERLOAD_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).max(3600).default(1),
  // The gateway's HTTP server: the whole request (headers and body) must arrive within
  // REQUEST_TIMEOUT_MS, its headers within REQUEST_HEADERS_TIMEOUT_MS (milliseconds); a request
  // that does not is answered 400 in the envelope and its connection closed. Answers and
  // long-lived streams are not timed by these.
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).default(30_000),
  REQUEST_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).default(10_000),
  // The live stream (docs/stream.md). Its replay window: events of the last STREAM_REPLAY_WINDOW_MS
  // (milliseconds), at most STREAM_REPLAY_EVENTS_PER_FEED per feed (and per user's notifications);
  // the gateways apply both to the NATS stream that keeps them.
  STREAM_REPLAY_WINDOW_MS: z.coerce.number().int().min(60_000).default(24 * 3600_000),
  STREAM_REPLAY_EVENTS_PER_FEED: z.coerce.number().int().min(1).default(10_000),
  // Open streams per end user (server tokens: per tenant, STREAM_MAX_PER_SERVER); one more answers 429.
  STREAM_MAX_PER_USER: z.coerce.number().int().min(1).default(5),
  STREAM_MAX_PER_SERVER: z.coerce.number().int().min(1).default(100),
  // Open streams one gateway process holds; one more answers 429.
  STREAM_MAX_PER_PROCESS: z.coerce.number().int().min(1).default(10_000),
  // How often a gateway renews the marks of the feeds its streams watch (milliseconds); a mark
  // found gone then ends the streams on its feed (docs/stream.md, "Watched feeds").
  STREAM_MARK_RENEW_MS: z.coerce.number().int().min(100).max(3600_000).default(60_000),
  // Each end user's own window, percent of its tenant's per-minute limit (checked first).
  USER_RATE_LIMIT_PERCENT: z.coerce.number().int().min(1).max(100).default(10),
  // Percent of a tenant's window that user tokens together may not take: server tokens always
  // have at least this much of it.
  SERVER_RESERVED_RATE_PERCENT: z.coerce.number().int().min(0).max(99).default(20),
  // Requests per minute per client address (IPv6: per /64) whose credential fails; past it the
  // address's unknown credentials are answered 429 before any lookup.
  AUTH_FAILURE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  // How long readiness and queue-depth answers are shared between callers (milliseconds); with
  // READY_CHECK_TIMEOUT_MS at most 2000 in all, so readiness notices a dead dependency within 2 s.
  READY_CACHE_MS: z.coerce.number().int().min(0).default(500),
});

export const configSchema = configFields
  .refine((c) => c.READY_CHECK_TIMEOUT_MS + c.READY_CACHE_MS <= 2000, {
    path: ["READY_CACHE_MS"],
    message: "READY_CHECK_TIMEOUT_MS + READY_CACHE_MS must be at most 2000 (readiness notices a dead dependency within 2 s)",
  })
  .refine((c) => c.REQUEST_HEADERS_TIMEOUT_MS <= c.REQUEST_TIMEOUT_MS, {
    path: ["REQUEST_HEADERS_TIMEOUT_MS"],
    message: "must be at most REQUEST_TIMEOUT_MS",
  });

export type Config = z.infer<typeof configSchema>;

/** The request-shape bounds the SDK and the gateway check (sdk/contract/src/limits.ts). */
export { requestLimits } from "@feeds/contract";

/** Fixed bounds the services hold whatever the deployment; docs/limits.md lists each for users. */
export const limits = {
  /** Comment blocklist: terms, characters of one term once trimmed, words across all terms. */
  blocklistTerms: requestLimits.blocklistTerms,
  blocklistTermChars: requestLimits.blocklistTermChars,
  blocklistWords: 5000,
  /** Distinct reaction kinds one activity may carry; also the most kinds a tenant may declare. */
  reactionKindsPerActivity: requestLimits.reactionKinds,
  /** Webhook deliveries of one tenant in flight at once in one notification worker process. */
  webhookDeliveriesPerTenant: 64,
  /**
   * Rate-limit weights: a costly request counts this many times in its windows. A follow counts
   * 1 plus 1 per `followCopiesPerUnit` activities it may copy (`activity_copy_limit`, default
   * 100: 2; at most 1,000: 11); `POST /v1/objects/bulk` 1 per `bulkObjectsPerUnit` objects
   * (at most 10); suggestions `suggestions`; react and unreact `reaction`.
   */
  rateWeights: { followCopiesPerUnit: 100, bulkObjectsPerUnit: 10, suggestions: 5, reaction: 2, notificationGroups: 3 },
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

/** Who signs a service call: the gateway, a service's process, or a service's FEEDS_ROLE=worker process. */
export type Signer = "gateway" | ServiceName | `${ServiceName}-worker`;
export const signers: readonly Signer[] = ["gateway", ...serviceNames, ...serviceNames.map((n) => `${n}-worker` as const)];
export const isSigner = (v: string): v is Signer => (signers as readonly string[]).includes(v);

/** `<signer>:<base64>,...` into 32-byte keys by signer, or what is wrong with it. */
function parseCallerKeys(v: string | undefined): { keys: Map<Signer, Buffer> | undefined } | { error: string } {
  if (v === undefined || v === "") return { keys: undefined };
  const keys = new Map<Signer, Buffer>();
  for (const entry of v.split(",")) {
    const [who, b64, extra] = entry.trim().split(":");
    if (who === undefined || b64 === undefined || extra !== undefined || !isSigner(who)) return { error: `"${entry.slice(0, 40)}" is not <process>:<base64 key> (process one of ${signers.join(", ")})` };
    if (keys.has(who)) return { error: `${who} is named twice` };
    const key = Buffer.from(b64, "base64");
    if (key.length !== 32) return { error: `the key of ${who} must be 32 bytes of base64` };
    keys.set(who, key);
  }
  return { keys };
}

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

/** The one-process system once a service is reached over the network: the root key, or a start-up failure. */
export function requireInternalKey(config: Config): Buffer {
  if (!config.FEEDS_INTERNAL_KEY) {
    throw new Error("invalid configuration:\n  FEEDS_INTERNAL_KEY: required where the one-process system reaches a service over the network");
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
