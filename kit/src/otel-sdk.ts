import { register } from "node:module";
import { basename, dirname } from "node:path";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { MongoDBInstrumentation } from "@opentelemetry/instrumentation-mongodb";
import { markTracingOn } from "./tracing.js";

/**
 * The service name when OTEL_SERVICE_NAME is not set: from the entry point and FEEDS_ROLE
 * (`feeds-gateway`, `feeds-feed`, `feeds-feed-worker`, `feeds-system`).
 */
export function defaultServiceName(entry: string | undefined, role: string | undefined): string {
  const dir = entry ? basename(dirname(dirname(entry))) : "";
  const name = dir && dir !== "." ? dir : "process";
  return `feeds-${name}${role === "worker" ? "-worker" : role === "api" ? "-api" : ""}`;
}

/** Starts the SDK (traces only: metrics stay Prometheus, logs stay stdout) and marks tracing on. */
export function startOtel(): void {
  // ESM modules reach the instrumentations through import-in-the-middle's loader hook.
  register("@opentelemetry/instrumentation/hook.mjs", import.meta.url);
  process.env.OTEL_METRICS_EXPORTER ??= "none";
  process.env.OTEL_LOGS_EXPORTER ??= "none";
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) wins, as the SDK reads them.
    ...(process.env.OTEL_SERVICE_NAME || /(^|,)\s*service\.name=/.test(process.env.OTEL_RESOURCE_ATTRIBUTES ?? "")
      ? {}
      : { serviceName: defaultServiceName(process.argv[1], process.env.FEEDS_ROLE) }),
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes are not traced.
        ignoreIncomingRequestHook: (req) => /^\/(metrics|livez|readyz|v1\/health)/.test(req.url ?? ""),
      }),
      new MongoDBInstrumentation(),
      new IORedisInstrumentation(),
    ],
  });
  sdk.start();
  markTracingOn(() => sdk.shutdown());
}
