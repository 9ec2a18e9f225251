import type { ChildProcess } from "node:child_process";

export declare const services: string[];
/** Worker name → the service whose code its process runs (FEEDS_ROLE=worker). */
export declare const workers: Record<string, string>;
export interface RunningProcess {
  name: string;
  child: ChildProcess;
  stop(): Promise<void>;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
  /** SIGKILL, then start again with the same environment and port. */
  restart(): Promise<void>;
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
  stop(): Promise<void>;
}
export declare function startSystem(opts: {
  env: Record<string, string>;
  split?: boolean;
  /** Split mode: the workers in processes of their own, their services serving routes only. */
  workers?: boolean;
  port?: number;
  inherit?: boolean;
}): Promise<RunningSystem>;
