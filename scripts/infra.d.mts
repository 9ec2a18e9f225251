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
export declare function startPrivateNats(opts?: { port?: number; storeDir?: string }): Promise<PrivateServer>;
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
