/**
 * Whether OTEL_* asks for traces: an exporter named (OTEL_TRACES_EXPORTER, other than `none`) or
 * an OTLP endpoint given (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); never
 * with OTEL_SDK_DISABLED=true. Anything else (OTEL_SERVICE_NAME alone, nothing set): off, and the
 * SDK is not even loaded.
 */
export function otelConfigured(env: Record<string, string | undefined>): boolean {
  const set = (k: string) => (env[k] ?? "").trim() !== "";
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (exporters.includes("none")) return false;
  return exporters.length > 0 || set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
}
