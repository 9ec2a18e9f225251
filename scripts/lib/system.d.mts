import type { ChildProcess } from "node:child_process";

export declare const services: string[];
/** Worker name → the service whose code its process runs (FEEDS_ROLE=worker). */
export declare const workers: Record<string, string>;
export interface RunningProcess {
  name: string;
  child: ChildProcess;
  stop(): Promise<void>;
  /** The process's first line as it started (or restarted): its url, ports. */
  first: Promise<{ url?: string; port?: number; metrics?: number }>;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
  /** SIGKILL, then start again with the same environment and port. */
  restart(): Promise<void>;
}
/** A TCP balancer in front of a replicated service (its URL's port). */
export interface Balancer {
  port: number;
  /** Takes backend `i` out of rotation for new connections (as a terminating pod's endpoint). */
  drain(i: number): void;
  undrain(i: number): void;
  close(): Promise<void>;
}
export interface RunningSystem {
  url: string;
  /** Split mode: `<SERVICE>_URL` → the service's gRPC base URL (empty in one-process mode). */
  urls: Record<string, string>;
  /** Split mode with `workers`: worker name → its process's gRPC base URL (grpc.health.v1 only). */
  workerUrls: Record<string, string>;
  /** Process name → its Prometheus `GET /metrics` URL as started (a restart takes a new port). */
  metrics: Record<string, string>;
  staff: { email: string; password?: string; created: boolean } | null;
  processes: RunningProcess[];
  /** `replicas`: service → its balancer. */
  balancers: Record<string, Balancer>;
  /** Every gateway's base URL as started (`gateways`). */
  gatewayUrls: string[];
  stop(): Promise<void>;
}
export declare function startSystem(opts: {
  env: Record<string, string>;
  split?: boolean;
  /** Split mode: the workers in processes of their own, their services serving routes only. */
  workers?: boolean;
  port?: number;
  inherit?: boolean;
  /** Split mode: processes per service (2 or more put a balancer in front). */
  replicas?: Record<string, number>;
  /** Gateway processes (default 1). */
  gateways?: number;
}): Promise<RunningSystem>;
