import type { InfraUrls, PrivateServer } from "../infra.mjs";

export declare const IMAGES: { mongo: string; nats: string; redis: string };
export declare function testInfraMode(env?: Record<string, string | undefined>): "local" | "containers";
export type EngineProbe = { ok: true; engine: string } | { ok: false; reason: string };
export declare function probeContainerEngine(opts?: {
  timeoutMs?: number;
  load?: () => Promise<{ getContainerRuntimeClient(): Promise<unknown> }>;
  env?: Record<string, string | undefined>;
}): Promise<EngineProbe>;
export interface TestContainers extends InfraUrls {
  stop(): Promise<void>;
}
export declare function serversWanted(env?: Record<string, string | undefined>): {
  given: { mongo?: string; nats?: string; redis?: string };
  start: ("mongo" | "nats" | "redis")[];
};
export declare function startTestContainers(opts?: { log?: (msg: string) => void; env?: Record<string, string | undefined> }): Promise<TestContainers>;
export declare function prepareContainers(opts?: {
  probe?: () => Promise<EngineProbe>;
  start?: (opts?: { log?: (msg: string) => void }) => Promise<TestContainers>;
}): Promise<{ skipped: string } | { engine: string; start: (opts?: { log?: (msg: string) => void }) => Promise<TestContainers> }>;
export declare function mongoUrlFor(host: string, port: number): string;
export declare function startPrivateContainer(kind: "mongo" | "nats" | "redis", opts?: { port?: number }): Promise<PrivateServer>;
