// The `--import` hook of every process (`node --import @feeds/kit/otel <entry>`): starts the
// OpenTelemetry SDK before the application loads, so that its instrumentations see the modules
// they patch (ESM included). With no OTEL_* asking for traces (otel-env.ts) it does nothing: the
// SDK is not loaded, and kit's tracing helpers stay no-ops.
import { otelConfigured } from "./otel-env.js";

if (otelConfigured(process.env)) {
  const { startOtel } = await import("./otel-sdk.js");
  startOtel();
}
