export interface StartedServer {
  name: string;
  what: string;
  port: number;
  pid: number;
  stamp: string;
  executable: string | null;
  pidfile: string | null;
  logFile: string | null;
  startedAt: number;
}
export interface ServerStatus {
  name: string;
  what: string;
  port: number;
  pid: number | null;
  /** Started by this checkout's set-up since `since` ('now'), before ('earlier'), or not ('no'). */
  started: "now" | "earlier" | "no";
}
export declare function processStamp(pid: number): string | null;
export declare function listenerPid(port: number): number | null;
export declare function recordStarted(opts: {
  root: string;
  name: string;
  what: string;
  port: number;
  pid?: number;
  pidfile?: string;
  logFile?: string;
}): StartedServer;
export declare function startedServers(root: string): StartedServer[];
export declare function serverStatus(root: string, servers: { name: string; what: string; port: number }[], since?: number): ServerStatus[];
export declare function describeServers(statuses: ServerStatus[]): string[];
export declare function stopStartedServers(root: string, opts?: { log?: (msg: string) => void; graceMs?: number }): Promise<StartedServer[]>;
