import type { ServerStatus } from "./lib/started-servers.mjs";

export interface InfraUrls {
  mongoUrl: string;
  natsUrl: string;
  redisUrl: string;
}
/** ensureInfra's answer: the URLs, and where each loopback server stands (none for a *_URL given). */
export interface EnsuredInfra extends InfraUrls {
  servers: ServerStatus[];
}
export interface PrivateServer {
  url: string;
  port: number;
  readonly pid: number | null;
  readonly running: boolean;
  start(): Promise<PrivateServer>;
  stop(opts?: { signal?: NodeJS.Signals; timeoutMs?: number }): Promise<void>;
}
export declare function ensureInfra(opts?: { root?: string; log?: (...a: unknown[]) => void }): Promise<EnsuredInfra>;
export declare function freePort(): Promise<number>;
export declare function startPrivateRedis(opts?: { port?: number; dir?: string }): Promise<PrivateServer>;
export interface RedisCluster {
  /** redis+cluster://127.0.0.1:<port>,... (kit's REDIS_URL form of a cluster). */
  url: string;
  ports: number[];
  /** Each master, stoppable on its own. */
  nodes: PrivateServer[];
  /** Stops every node and removes their folder. */
  stop(): Promise<void>;
}
export declare function startRedisCluster(opts?: { masters?: number }): Promise<RedisCluster>;
export declare function startPrivateNats(opts?: { port?: number; storeDir?: string }): Promise<PrivateServer>;
export interface NatsClusterNode extends PrivateServer {
  /** Its server name: what JetStream reports as a stream's `cluster.leader`. */
  name: string;
}
export interface NatsCluster {
  urls: string[];
  /** Every node's client URL, comma-separated (as NATS_URL takes them). */
  url: string;
  nodes: NatsClusterNode[];
  node(name: string): NatsClusterNode | undefined;
  /** The server name of JetStream's meta leader, or null while there is none. */
  metaLeader(): Promise<string | null>;
  /** Stops every node and removes their stores. */
  stop(): Promise<void>;
}
export declare function startNatsCluster(opts?: { size?: number; clusterName?: string; dir?: string }): Promise<NatsCluster>;
export declare function startPrivateFerretdb(opts?: {
  port?: number;
  dir?: string;
  backend?: "auto" | "postgresql" | "sqlite";
  gin?: boolean;
  logLevel?: string;
  /** The launcher's -ttl-period, e.g. "1s". */
  ttlPeriod?: string;
  /** More launcher flags. */
  args?: string[];
}): Promise<PrivateServer>;
/** Top-level strings and numbers of the buildInfo reply on a loopback port (null: no answer). */
export declare function probeBuildInfo(port?: number, host?: string): Promise<Record<string, string | number | boolean> | null>;
/** Hash of the FerretDB launcher's sources (its buildInfo reports it as feedsLauncher). */
export declare function ferretdbLauncherSources(): string;
/** True if something accepts TCP connections on host:port. */
export declare function portOpen(port: number, host?: string, timeoutMs?: number): Promise<boolean>;
/** True if a Redis answers PING on host:port. */
export declare function probeRedis(port?: number, host?: string): Promise<boolean>;
